/**
 * The second factor (docs/factors.md): TOTP enrolment and codes, recovery codes, step-up by
 * acr_values, a client that requires a second factor, and every refusal, through the Worker's fetch.
 */
import { env } from "cloudflare:workers";
import { and, eq } from "drizzle-orm";
import { Secret, TOTP } from "otpauth";
import { afterEach, describe, expect, it, vi } from "vitest";
import { openDatabase } from "../src/db/client";
import { auditEvents, recoveryCodes, totpFactors } from "../src/db/schema";
import { Browser, expectPage, redirectParameters } from "./helpers/browser";
import { basicAuth, bearer, call, claimsOf, container, expectOAuthError, postForm, serverToken } from "./helpers/http";
import { mailbox } from "./helpers/mailbox";
import { createClient, createUser } from "./helpers/seed";

const CALLBACK = "https://test.example/callback";
const START = Date.UTC(2026, 10, 2, 9, 0, 0);

let nextUser = 43_000 + Math.floor(Math.random() * 40) * 20;

type Tokens = { access_token: string; id_token: string; refresh_token: string };

async function client(overrides: Record<string, unknown> = {}) {
  return createClient({
    redirectUris: [CALLBACK],
    grantTypes: ["authorization_code", "refresh_token", "password"],
    autoApprove: true,
    ...overrides,
  });
}

function authorizePath(clientId: string, extra: Record<string, string> = {}) {
  const params = new URLSearchParams({
    client_id: clientId,
    redirect_uri: CALLBACK,
    response_type: "code",
    scope: "openid",
    state: "st-2fa",
    ...extra,
  });
  return `/oauth/authorize?${params}`;
}

async function logIn(browser: Browser, clientId: string, user: { email: string; password: string }, extra = {}) {
  const page = await expectPage(await browser.get(authorizePath(clientId, extra)), 200, "Sign in");
  return browser.submit(page, { action: "login", email: user.email, password: user.password });
}

async function redeem(app: { id: string; secret: string }, res: Response): Promise<Tokens> {
  const code = redirectParameters(res).params.get("code")!;
  const token = await postForm(
    "/oauth/token",
    { grant_type: "authorization_code", code, redirect_uri: CALLBACK },
    basicAuth(app.id, app.secret),
  );
  expect(token.status).toBe(200);
  return (await token.json()) as Tokens;
}

/** The authenticator's secret as the enrolment page shows it for typing in. */
function shownSecret(page: string): string {
  return /<code class="key">([A-Z2-7 ]+)<\/code>/.exec(page)![1]!.replace(/ /g, "");
}

/** The code an authenticator app shows for `secret` at `time` (Unix ms). */
function codeAt(secret: string, time: number): string {
  return new TOTP({ secret: Secret.fromBase32(secret), algorithm: "SHA1", digits: 6, period: 30 }).generate({
    timestamp: time,
  });
}

function hiddenEnrolment(page: string): string {
  return /name="enrolment" value="([^"]+)"/.exec(page)![1]!;
}

function shownRecoveryCodes(page: string): string[] {
  return [...page.matchAll(/<li><code>([a-z2-7-]{19})<\/code><\/li>/g)].map((match) => match[1]!);
}

const db = () => openDatabase(env.DB);

/** Signs in at a client that requires a second factor and enrols one; the browser's session then has both. */
async function enrolled(browser = new Browser()) {
  const app = await client({ requireSecondFactor: true });
  const user = await createUser(nextUser++, { clients: [app.id] });
  const userId = Number(user.row.userId);
  const enrol = await expectPage(await logIn(browser, app.id, user), 200, "Set up a second factor");
  const secret = shownSecret(enrol);
  const codes = await expectPage(
    await browser.submit(enrol, { action: "enrol", code: codeAt(secret, Date.now()) }),
    200,
    "Save your recovery codes",
  );
  const recovery = shownRecoveryCodes(codes);
  const done = await browser.submit(codes, { action: "resume" });
  return { app, user, userId, secret, recovery, done, browser };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("enrolling a second factor", () => {
  it("enrols a user who has none at a client that requires one: QR code, key, first code, recovery codes, then the client", async () => {
    const browser = new Browser();
    const app = await client({ requireSecondFactor: true });
    const user = await createUser(nextUser++, { clients: [] });
    const userId = Number(user.row.userId);
    const res = await logIn(browser, app.id, user);
    const enrol = await expectPage(res, 200, "Set up a second factor");
    // The QR code is an inline SVG: no image is fetched, and the CSP allows none.
    expect(enrol).toMatch(/<div class="qr" role="img" aria-label="QR code for your authenticator app"><svg /);
    expect(res.headers.get("Content-Security-Policy")).not.toContain("img-src");
    const secret = shownSecret(enrol);
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    // Showing the page wrote nothing.
    expect(await db().select().from(totpFactors).where(eq(totpFactors.userId, userId)).all()).toEqual([]);

    const wrong = await browser.submit(enrol, { action: "enrol", code: "000000" });
    const again = await expectPage(wrong, 401, "Set up a second factor");
    expect(again).toContain('role="alert"');
    // The same secret again: the app holds it already.
    expect(shownSecret(again)).toBe(secret);

    const codesPage = await expectPage(
      await browser.submit(enrol, { action: "enrol", code: codeAt(secret, Date.now()) }),
      200,
      "Save your recovery codes",
    );
    const recovery = shownRecoveryCodes(codesPage);
    expect(recovery).toHaveLength(10);
    expect(new Set(recovery).size).toBe(10);

    const [factor] = await db().select().from(totpFactors).where(eq(totpFactors.userId, userId)).all();
    expect(factor).toMatchObject({ clientId: app.id, merchantId: 10 });
    // Sealed, never the secret itself; the recovery codes only as hashes.
    expect(factor!.secretSealed).not.toContain(secret);
    const stored = await db().select().from(recoveryCodes).where(eq(recoveryCodes.userId, userId)).all();
    expect(stored).toHaveLength(10);
    for (const row of stored) {
      expect(recovery.some((code) => row.codeHash.includes(code.replace(/-/g, "")))).toBe(false);
      expect(row).toMatchObject({ used: null, clientId: app.id, merchantId: 10 });
    }

    const tokens = await redeem(app, await browser.submit(codesPage, { action: "resume" }));
    expect(claimsOf(tokens.id_token)).toMatchObject({ acr: "otp", amr: ["pwd", "otp", "mfa"] });
    const [entry] = await db()
      .select()
      .from(auditEvents)
      .where(and(eq(auditEvents.userId, userId), eq(auditEvents.action, "user.factor.enrol")))
      .all();
    expect(entry).toMatchObject({ clientId: app.id, actor: "user", detail: { factor: "totp" } });
    // The refresh keeps saying how the user signed in.
    const refreshed = await postForm(
      "/oauth/token",
      { grant_type: "refresh_token", refresh_token: tokens.refresh_token },
      basicAuth(app.id, app.secret),
    );
    expect(claimsOf(((await refreshed.json()) as Tokens).id_token)).toMatchObject({ amr: ["pwd", "otp", "mfa"] });
  });

  it("refuses an enrolment page that expired (the sign-in with it), or another user's, and shows a new one", async () => {
    vi.useFakeTimers({ toFake: ["Date"], now: START });
    const browser = new Browser();
    const app = await client({ requireSecondFactor: true });
    const user = await createUser(nextUser++, { clients: [] });
    const enrol = await expectPage(await logIn(browser, app.id, user), 200, "Set up a second factor");
    const secret = shownSecret(enrol);
    vi.setSystemTime(START + 11 * 60_000);
    // After 10 minutes the sign-in is too old to set a factor up with: the login page first.
    const old = await browser.submit(enrol, { action: "enrol", code: codeAt(secret, Date.now()) });
    const login = await expectPage(old, 200, "Sign in");
    const fresh = await browser.submit(login, { action: "login", email: user.email, password: user.password });
    const expired = await expectPage(
      await browser.submit(await fresh.text(), {
        action: "enrol",
        enrolment: hiddenEnrolment(enrol),
        code: codeAt(secret, Date.now()),
      }),
      400,
      "Set up a second factor",
    );
    expect(expired).toContain("This set-up page had expired");
    expect(shownSecret(expired)).not.toBe(secret);

    // Another user's enrolment page, posted in this user's session: its secret is not this user's.
    const other = new Browser();
    const otherUser = await createUser(nextUser++, { clients: [] });
    const otherPage = await expectPage(await logIn(other, app.id, otherUser), 200, "Set up a second factor");
    const enrolment = /name="enrolment" value="([^"]+)"/.exec(otherPage)![1]!;
    const refused = await browser.submit(expired, {
      action: "enrol",
      enrolment,
      code: codeAt(shownSecret(otherPage), Date.now()),
    });
    await expectPage(refused, 400, "Set up a second factor");
    expect(
      await db()
        .select()
        .from(totpFactors)
        .where(eq(totpFactors.userId, Number(user.row.userId)))
        .all(),
    ).toEqual([]);
  });

  it("asks for the code of an enrolled factor on every sign-in, at any client", async () => {
    const { user, secret } = await enrolled();
    const plain = await client();
    const browser = new Browser();
    const page = await expectPage(await logIn(browser, plain.id, user), 200, "Enter your code");
    expect(page).toContain('autocomplete="one-time-code"');
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 30_000 });
    const tokens = await redeem(plain, await browser.submit(page, { action: "otp", code: codeAt(secret, Date.now()) }));
    expect(claimsOf(tokens.id_token)).toMatchObject({ acr: "otp", amr: ["pwd", "otp", "mfa"] });
  });
});

describe("the second factor after a sign-in link", () => {
  it("asks for the code once the link signed in, and the ID token says both", async () => {
    const { user, secret } = await enrolled();
    const plain = await client();
    const mail = mailbox();
    const browser = new Browser();
    const login = await expectPage(await browser.get(authorizePath(plain.id)), 200, "Sign in");
    expect((await browser.submit(login, { action: "link", email: user.email })).status).toBe(200);
    const confirm = await expectPage(await browser.get(await mail.link(user.email)), 200, "Confirm sign-in");
    const page = await expectPage(await browser.submit(confirm, {}), 200, "Enter your code");
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 30_000 });
    const tokens = await redeem(plain, await browser.submit(page, { action: "otp", code: codeAt(secret, Date.now()) }));
    expect(claimsOf(tokens.id_token)).toMatchObject({ acr: "otp", amr: ["email", "otp", "mfa"] });
    vi.restoreAllMocks();
  });
});

describe("the second factor's code", () => {
  it("takes a code once: the enrolment's code, a replayed one and one outside the window are refused", async () => {
    const { user, secret, userId } = await enrolled();
    const plain = await client();
    const browser = new Browser();
    const page = await expectPage(await logIn(browser, plain.id, user), 200, "Enter your code");
    // The code that enrolled the factor was taken already.
    const replayed = await expectPage(
      await browser.submit(page, { action: "otp", code: codeAt(secret, Date.now()) }),
      401,
      "Enter your code",
    );
    expect(replayed).toContain("That code is not right, or it was used already.");
    // Two steps away is outside the window of one step either side.
    const { lastStep } = (await db().select().from(totpFactors).where(eq(totpFactors.userId, userId)).get())!;
    await expectPage(
      await browser.submit(page, { action: "otp", code: codeAt(secret, (lastStep + 3) * 30_000) }),
      401,
      "Enter your code",
    );
    vi.useFakeTimers({ toFake: ["Date"], now: (lastStep + 1) * 30_000 + 5_000 });
    const next = codeAt(secret, Date.now());
    expect((await browser.submit(page, { action: "otp", code: next })).status).toBe(303);
    // The same code in another browser, within its 30 seconds: refused.
    const thief = new Browser();
    const thiefPage = await expectPage(await logIn(thief, plain.id, user), 200, "Enter your code");
    await expectPage(await thief.submit(thiefPage, { action: "otp", code: next }), 401, "Enter your code");
    // So is a code of an earlier step than the one taken, though within the window.
    await expectPage(
      await thief.submit(thiefPage, { action: "otp", code: codeAt(secret, Date.now() - 30_000) }),
      401,
      "Enter your code",
    );
  });

  it("takes each recovery code once, however it is typed, and records which factor signed in", async () => {
    const { user, recovery, userId } = await enrolled();
    const plain = await client();
    const browser = new Browser();
    const page = await expectPage(await logIn(browser, plain.id, user), 200, "Enter your code");
    const typed = ` ${recovery[3]!.toUpperCase().replace(/-/g, " ")} `;
    const tokens = await redeem(plain, await browser.submit(page, { action: "otp", code: typed }));
    expect(claimsOf(tokens.id_token)).toMatchObject({ acr: "otp", amr: ["pwd", "otp", "mfa"] });
    const used = await db()
      .select()
      .from(recoveryCodes)
      .where(and(eq(recoveryCodes.userId, userId)))
      .all();
    expect(used.filter((row) => row.used !== null)).toHaveLength(1);
    const [entry] = await db()
      .select()
      .from(auditEvents)
      .where(and(eq(auditEvents.userId, userId), eq(auditEvents.action, "signin.second-factor")))
      .all()
      .then((rows) => rows.filter((row) => (row.detail as { factor: string }).factor === "recovery-code"));
    expect(entry).toBeDefined();

    const other = new Browser();
    const again = await expectPage(await logIn(other, plain.id, user), 200, "Enter your code");
    await expectPage(await other.submit(again, { action: "otp", code: recovery[3]! }), 401, "Enter your code");
    await expectPage(await other.submit(again, { action: "otp", code: "not-a-code" }), 401, "Enter your code");
    expect((await other.submit(again, { action: "otp", code: recovery[4]! })).status).toBe(303);
  });

  it("holds guessing after five wrong codes from one network, and records each failure", async () => {
    const { user, secret } = await enrolled();
    const plain = await client();
    const browser = new Browser({ "CF-Connecting-IP": "198.51.100.77" });
    const page = await expectPage(await logIn(browser, plain.id, user), 200, "Enter your code");
    for (let attempt = 0; attempt < 5; attempt++) {
      await expectPage(await browser.submit(page, { action: "otp", code: "123456" }), 401, "Enter your code");
    }
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 30_000 });
    const held = await browser.submit(page, { action: "otp", code: codeAt(secret, Date.now()) });
    const text = await expectPage(held, 429, "Enter your code");
    expect(text).toContain("Too many attempts");
    expect(Number(held.headers.get("Retry-After"))).toBeGreaterThan(0);
    await vi.waitFor(async () => {
      const failures = await db()
        .select()
        .from(auditEvents)
        .where(and(eq(auditEvents.clientId, plain.id), eq(auditEvents.action, "signin.failure")))
        .all();
      expect(failures.filter((row) => (row.detail as { method: string }).method === "otp")).toHaveLength(5);
    });
    // Not a lockout: the owner's code from another network is taken.
    const owner = new Browser({ "CF-Connecting-IP": "203.0.113.9" });
    const ownerPage = await expectPage(await logIn(owner, plain.id, user), 200, "Enter your code");
    vi.setSystemTime(Date.now() + 30_000);
    expect((await owner.submit(ownerPage, { action: "otp", code: codeAt(secret, Date.now()) })).status).toBe(303);
  });

  it("refuses the code pages' actions without the flow's ticket, or with another client's", async () => {
    const { user, secret } = await enrolled();
    const first = await client();
    const second = await client();
    const browser = new Browser();
    const page = await expectPage(await logIn(browser, first.id, user), 200, "Enter your code");
    const ticket = /name="factor" value="([^"]+)"/.exec(page)![1]!;
    const code = codeAt(secret, Date.now() + 30_000);
    const without = await browser.submit(page, { action: "otp", code, factor: "" });
    expect(await expectPage(without, 403, "Sign in")).toContain("The page had expired");
    // The second client's login page, posted with the first client's ticket: no code skips its password.
    const secondPage = await expectPage(await browser.get(authorizePath(second.id)), 200, "Sign in");
    for (const action of ["otp", "resume"]) {
      const res = await browser.submit(secondPage, { action, code, factor: ticket });
      await expectPage(res, 403, "Sign in");
    }
  });
});

describe("step-up and what a sign-in is worth", () => {
  it("asks a signed-in user for a second factor when acr_values asks for one, and enrols one who has none", async () => {
    const app = await client({ enableSso: true });
    const user = await createUser(nextUser++, { clients: [] });
    const browser = new Browser();
    const first = await redeem(app, await logIn(browser, app.id, user));
    expect(claimsOf(first.id_token)).toMatchObject({ acr: "password", amr: ["pwd"] });
    // Voluntary: classes it does not know, or any that a password meets, change nothing.
    for (const acrValues of ["eid-no", "password otp"]) {
      expect((await browser.get(authorizePath(app.id, { acr_values: acrValues }))).status).toBe(303);
    }
    const none = await browser.get(authorizePath(app.id, { acr_values: "otp", prompt: "none" }));
    expect(redirectParameters(none).params.get("error")).toBe("interaction_required");

    const enrol = await expectPage(
      await browser.get(authorizePath(app.id, { acr_values: "otp" })),
      200,
      "Set up a second factor",
    );
    const codes = await browser.submit(enrol, { action: "enrol", code: codeAt(shownSecret(enrol), Date.now()) });
    const stepped = await redeem(app, await browser.submit(await codes.text(), { action: "resume" }));
    expect(claimsOf(stepped.id_token)).toMatchObject({ acr: "otp", amr: ["pwd", "otp", "mfa"] });
    // The same session, its sign-in raised: single sign-on now carries the second factor.
    const again = await redeem(app, await browser.get(authorizePath(app.id, { acr_values: "otp", prompt: "none" })));
    expect(claimsOf(again.id_token)).toMatchObject({ acr: "otp" });
  });

  it("sets up no second factor on an old session: the login page first", async () => {
    const app = await client({ enableSso: true });
    const user = await createUser(nextUser++, { clients: [] });
    const browser = new Browser();
    await redeem(app, await logIn(browser, app.id, user));
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 11 * 60_000 });
    const stale = await browser.get(authorizePath(app.id, { acr_values: "otp" }));
    const login = await expectPage(stale, 200, "Sign in");
    const enrol = await browser.submit(login, { action: "login", email: user.email, password: user.password });
    await expectPage(enrol, 200, "Set up a second factor");
  });

  it("passes no session of a user with a second factor through without it, and asks for it on the consent page too", async () => {
    const { user, secret } = await enrolled();
    const sso = await client({ enableSso: true, autoApprove: false });
    const browser = new Browser();
    await expectPage(await logIn(browser, sso.id, user), 200, "Enter your code");
    const none = await browser.get(authorizePath(sso.id, { prompt: "none" }));
    expect(redirectParameters(none).params.get("error")).toBe("interaction_required");
    const page = await expectPage(await browser.get(authorizePath(sso.id)), 200, "Enter your code");
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 30_000 });
    const consent = await expectPage(
      await browser.submit(page, { action: "otp", code: codeAt(secret, Date.now()) }),
      200,
      "Allow access",
    );
    expect((await browser.submit(consent, { action: "approve" })).status).toBe(303);
  });

  it("refuses the password grant to a user with a second factor, and at a client that requires one", async () => {
    const { user } = await enrolled();
    const plain = await client();
    const grant = (app: { id: string; secret: string }, who: { email: string; password: string }) =>
      postForm(
        "/oauth/token",
        { grant_type: "password", username: who.email, password: who.password, redirect_uri: CALLBACK },
        basicAuth(app.id, app.secret),
      );
    await expectOAuthError(
      await grant(plain, user),
      "invalid_grant",
      "The user must sign in with a second factor, through the authorization endpoint",
    );
    const strict = await client({ requireSecondFactor: true });
    const other = await createUser(nextUser++, { clients: [strict.id] });
    await expectOAuthError(await grant(strict, other), "invalid_grant");
    // A wrong password is still only that: whether the account has a second factor is not told.
    await expectOAuthError(
      await grant(plain, { ...user, password: "wrong" }),
      "invalid_grant",
      "Invalid username or password",
    );
  });

  it("lists the classes in the metadata and takes requireSecondFactor as a client setting", async () => {
    const metadata = (await (await call("/.well-known/openid-configuration")).json()) as Record<string, unknown>;
    expect(metadata.acr_values_supported).toEqual(["password", "otp-email", "otp"]);
    const admin = await client({ admin: true, grantTypes: ["client_credentials"] });
    const token = await serverToken(admin);
    const json = { ...bearer(token), "Content-Type": "application/json" };
    const made = await call("/api/2/client", {
      method: "POST",
      headers: json,
      body: JSON.stringify({ name: "Strict", redirectUris: [CALLBACK], requireSecondFactor: true }),
    });
    expect(made.status).toBe(201);
    const { clientId, requireSecondFactor } = (await container(made)).data as {
      clientId: string;
      requireSecondFactor: boolean;
    };
    expect(requireSecondFactor).toBe(true);
    const changed = await call(`/api/2/client/${clientId}`, {
      method: "POST",
      headers: json,
      body: JSON.stringify({ requireSecondFactor: false }),
    });
    expect((await container(changed)).data).toMatchObject({ requireSecondFactor: false });
  });
});

describe("erasure", () => {
  it("removes the second factor and its recovery codes with the user", async () => {
    const { userId } = await enrolled();
    const rows = async () => [
      ...(await db().select().from(totpFactors).where(eq(totpFactors.userId, userId)).all()),
      ...(await db().select().from(recoveryCodes).where(eq(recoveryCodes.userId, userId)).all()),
    ];
    expect(await rows()).toHaveLength(11);
    await erase(userId);
    expect(await rows()).toEqual([]);
  });
});

async function erase(userId: number) {
  const admin = await client({ admin: true, grantTypes: ["client_credentials"] });
  const res = await call(`/api/2/user/${userId}`, { method: "DELETE", headers: bearer(await serverToken(admin)) });
  expect(res.status).toBe(200);
}
