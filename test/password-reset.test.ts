/**
 * Forgot password (docs/factors.md "Recovery"): the login page's link to the forgotten-password
 * view, the mailed link (5 minutes, once), the new password, and every session and refresh token
 * of the user ended, through the Worker's fetch with the console mailer.
 */
import { env } from "cloudflare:workers";
import { and, eq } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { openDatabase } from "../src/db/client";
import { Secret, TOTP } from "otpauth";
import { auditEvents, totpFactors } from "../src/db/schema";
import { keyRing, sealSecret } from "../src/security/data-protection";
import { Browser, expectPage, redirectParameters } from "./helpers/browser";
import { basicAuth, expectOAuthError, postForm } from "./helpers/http";
import { mailbox } from "./helpers/mailbox";
import { createClient, createUser } from "./helpers/seed";

const CALLBACK = "https://test.example/callback";
let nextUser = 47_000 + Math.floor(Math.random() * 40) * 20;

async function client() {
  return createClient({
    redirectUris: [CALLBACK],
    grantTypes: ["authorization_code", "refresh_token", "password"],
    autoApprove: true,
    enableSso: true,
  });
}

const authorizePath = (clientId: string, extra: Record<string, string> = {}) =>
  `/oauth/authorize?${new URLSearchParams({ client_id: clientId, redirect_uri: CALLBACK, response_type: "code", state: "reset", ...extra })}`;

function passwordGrant(app: { id: string; secret: string }, email: string, password: string) {
  return postForm(
    "/oauth/token",
    { grant_type: "password", username: email, password, redirect_uri: CALLBACK },
    basicAuth(app.id, app.secret),
  );
}

/** Asks for a reset link on the login page's forgotten-password view; the page that answered. */
async function askForReset(browser: Browser, clientId: string, email: string) {
  const login = await expectPage(await browser.get(authorizePath(clientId)), 200, "Sign in");
  const href = /<a href="([^"]+)">Forgot your password\?<\/a>/.exec(login)![1]!.replace(/&amp;/g, "&");
  const view = await expectPage(await browser.get(href), 200, "Set a new password");
  expect(view).not.toContain('name="password"');
  return expectPage(await browser.submit(view, { action: "reset", email }), 200, "Check your e-mail");
}

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe("forgot password", () => {
  it("sets a new password by the mailed link, signs the user in, and ends every other session and grant", async () => {
    const app = await client();
    const user = await createUser(nextUser++, { clients: [app.id] });
    const userId = Number(user.row.userId);
    const before = (await (await passwordGrant(app, user.email, user.password)).json()) as { refresh_token: string };
    const elsewhere = new Browser();
    const login = await expectPage(await elsewhere.get(authorizePath(app.id)), 200, "Sign in");
    await elsewhere.submit(login, { action: "login", email: user.email, password: user.password });

    const mail = mailbox();
    const browser = new Browser();
    await askForReset(browser, app.id, user.email);
    const link = await mail.link(user.email);
    expect(mail.printed()).toContain("Set a new password for");
    const page = await expectPage(await browser.get(link), 200, "Set a new password");
    expect(page).toContain('autocomplete="new-password"');

    const short = await browser.submit(page, { password: "short" });
    expect(await expectPage(short, 400, "Set a new password")).toContain("at least 8 characters");
    const done = await browser.submit(page, { password: "a brand new passphrase" });
    expect(redirectParameters(done).params.get("code")).not.toBeNull();

    await expectOAuthError(await passwordGrant(app, user.email, user.password), "invalid_grant");
    expect((await passwordGrant(app, user.email, "a brand new passphrase")).status).toBe(200);
    // The grant and the browser session made before are over.
    const refreshed = await postForm(
      "/oauth/token",
      { grant_type: "refresh_token", refresh_token: before.refresh_token },
      basicAuth(app.id, app.secret),
    );
    await expectOAuthError(refreshed, "invalid_grant");
    expect((await elsewhere.get(authorizePath(app.id))).status).toBe(200);
    // The link worked once.
    await expectPage(await new Browser().get(link), 410, "This link no longer works");
    const [entry] = await openDatabase(env.DB)
      .select()
      .from(auditEvents)
      .where(and(eq(auditEvents.userId, userId), eq(auditEvents.action, "user.password.reset")))
      .all();
    expect(entry).toMatchObject({ clientId: app.id, actor: "user" });
    expect(entry!.detail).toMatchObject({ sessions: 1 });
  });

  it("answers an unknown address as any other, and mails nothing", async () => {
    const app = await client();
    const mail = mailbox();
    await askForReset(new Browser(), app.id, `nobody-${nextUser++}@example.org`);
    await new Promise((done) => setTimeout(done, 300));
    expect(mail.printed()).not.toContain("Set a new password for");
  });

  it("opens the view at SPiD's /flow/password, and never passes a signed-in browser through it", async () => {
    const app = await client();
    const user = await createUser(nextUser++, { clients: [app.id] });
    const browser = new Browser();
    const login = await expectPage(await browser.get(authorizePath(app.id)), 200, "Sign in");
    expect((await browser.submit(login, { action: "login", email: user.email, password: user.password })).status).toBe(
      303,
    );
    const query = new URLSearchParams({ client_id: app.id, redirect_uri: CALLBACK, response_type: "code" });
    await expectPage(await browser.get(`/flow/password?${query}`), 200, "Set a new password");
    await expectPage(await browser.get(authorizePath(app.id, { view: "password" })), 200, "Set a new password");
  });

  it("asks a user with a second factor for its code before a new password is set", async () => {
    const app = await client();
    const user = await createUser(nextUser++, { clients: [app.id] });
    const secret = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP";
    const now = Math.floor(Date.now() / 1000);
    await openDatabase(env.DB)
      .insert(totpFactors)
      .values({
        userId: Number(user.row.userId),
        secretSealed: await sealSecret(keyRing(env), secret),
        created: now,
        clientId: app.id,
        merchantId: 10,
      });
    const mail = mailbox();
    const browser = new Browser();
    await askForReset(browser, app.id, user.email);
    const page = await expectPage(await browser.get(await mail.link(user.email)), 200, "Set a new password");
    expect(page).toContain('autocomplete="one-time-code"');
    const wrong = await browser.submit(page, { password: "a brand new passphrase", code: "000000" });
    expect(await expectPage(wrong, 401, "Set a new password")).toContain("That code is not right");
    expect((await passwordGrant(app, user.email, user.password)).status).not.toBe(200);
    const code = new TOTP({ secret: Secret.fromBase32(secret) }).generate();
    const done = await browser.submit(page, { password: "a brand new passphrase", code });
    // Both factors given: the flow goes on without asking for the code again.
    expect(redirectParameters(done).params.get("code")).not.toBeNull();
  });

  it("expires the link after 5 minutes", async () => {
    const app = await client();
    const user = await createUser(nextUser++, { clients: [app.id] });
    const mail = mailbox();
    const browser = new Browser();
    await askForReset(browser, app.id, user.email);
    const link = await mail.link(user.email);
    const page = await expectPage(await browser.get(link), 200, "Set a new password");
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 6 * 60_000 });
    await expectPage(await browser.submit(page, { password: "a brand new passphrase" }), 410, "This link has expired");
    expect((await passwordGrant(app, user.email, user.password)).status).toBe(200);
  });
});
