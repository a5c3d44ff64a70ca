/**
 * What the sign-in pages offer besides their forms: the client's branding, who is signed in on the
 * consent page and the way to another account, the language switch, and a way back to the client
 * from pages where a flow ends.
 */
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { openDatabase } from "../src/db/client";
import { users } from "../src/db/schema";
import { Browser, expectPage, redirectParameters } from "./helpers/browser";
import { mailbox } from "./helpers/mailbox";
import { createClient, createUser } from "./helpers/seed";

const CALLBACK = "https://test.example/callback";
const FAILED = "https://test.example/failed";
const LOGO = "https://brand.example/logo.png";
let nextUser = 49_000 + Math.floor(Math.random() * 40) * 20;

async function brandedClient(overrides: Record<string, unknown> = {}) {
  return createClient({
    name: "Brand Shop",
    redirectUris: [CALLBACK, FAILED],
    grantTypes: ["authorization_code"],
    logoUri: LOGO,
    clientUri: "https://brand.example/",
    css: { button: { "background-color": "#1f6f4a" } },
    ...overrides,
  });
}

const authorizePath = (clientId: string, extra: Record<string, string> = {}) =>
  `/oauth/authorize?${new URLSearchParams({ client_id: clientId, redirect_uri: CALLBACK, response_type: "code", state: "st-pages", ...extra })}`;

const unescape = (href: string) => href.replace(/&amp;/g, "&");

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe("branding", () => {
  it("shows the client's name, logo and colours on the login, consent and link pages", async () => {
    const app = await brandedClient();
    const user = await createUser(nextUser++, { clients: [] });
    const browser = new Browser();
    const res = await browser.get(authorizePath(app.id));
    const login = await expectPage(res, 200, "Sign in");
    expect(login).toContain("Sign in to continue to Brand Shop.");
    expect(login).toContain(`<img class="logo" src="${LOGO}"`);
    expect(login).toContain("button{background-color:#1f6f4a}");
    expect(res.headers.get("Content-Security-Policy")).toContain(`img-src ${LOGO}`);
    const consent = await expectPage(
      await browser.submit(login, { action: "login", email: user.email, password: user.password }),
      200,
      "Allow access",
    );
    expect(consent).toContain(`<img class="logo" src="${LOGO}"`);

    const mail = mailbox();
    const other = new Browser();
    const page = await expectPage(await other.get(authorizePath(app.id)), 200, "Sign in");
    await other.submit(page, { action: "link", email: user.email });
    const confirm = await other.get(await mail.link(user.email));
    expect(await expectPage(confirm, 200, "Confirm sign-in")).toContain(`<img class="logo" src="${LOGO}"`);
    expect(confirm.headers.get("Content-Security-Policy")).toContain(`img-src ${LOGO}`);
  });
});

describe("the consent page", () => {
  it("says who is signed in, and switches to another account on request", async () => {
    const app = await brandedClient({ enableSso: true });
    const first = await createUser(nextUser++, { clients: [] });
    const browser = new Browser();
    const login = await expectPage(await browser.get(authorizePath(app.id)), 200, "Sign in");
    const consent = await expectPage(
      await browser.submit(login, { action: "login", email: first.email, password: first.password }),
      200,
      "Allow access",
    );
    expect(consent).toContain(`You are signed in as ${first.email}.`);
    const switched = await browser.submit(consent, { action: "switch" });
    const again = await expectPage(switched, 200, "Sign in");
    const second = await createUser(nextUser++, { clients: [app.id] });
    const done = await browser.submit(again, { action: "login", email: second.email, password: second.password });
    expect(redirectParameters(done).params.get("code")).not.toBeNull();
  });
});

describe("the language switch", () => {
  it("links each page to itself in the other two locales, named in their own languages", async () => {
    const app = await brandedClient();
    const login = await expectPage(
      await new Browser().get(authorizePath(app.id, { locale: "nb_NO" })),
      200,
      "Logg inn",
    );
    expect(login).toContain('<nav class="languages" aria-label="Språk">');
    expect(login).toContain('<span aria-current="page">Norsk</span>');
    const swedish = /<a href="([^"]+)" hreflang="sv-SE">Svenska<\/a>/.exec(login)![1]!;
    const switched = await expectPage(await new Browser().get(unescape(swedish)), 200, "Logga in");
    expect(switched).toContain("Logga in för att fortsätta till Brand Shop.");
    expect(unescape(swedish)).toContain(`client_id=${app.id}`);
  });
});

describe("a way back to the client", () => {
  it("from a link that no longer works: the request's failure URI with access_denied and its state", async () => {
    const app = await brandedClient();
    const user = await createUser(nextUser++, { clients: [app.id] });
    const mail = mailbox();
    const browser = new Browser();
    const login = await expectPage(
      await browser.get(authorizePath(app.id, { failure_redirect_uri: FAILED })),
      200,
      "Sign in",
    );
    await browser.submit(login, { action: "link", email: user.email });
    const link = await mail.link(user.email);
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 6 * 60_000 });
    const expired = await expectPage(await browser.get(link), 410, "This link has expired");
    const back = new URL(unescape(/<a href="([^"]+)">Back to Brand Shop<\/a>/.exec(expired)![1]!));
    expect(`${back.origin}${back.pathname}`).toBe(FAILED);
    expect(Object.fromEntries(back.searchParams)).toMatchObject({ error: "access_denied", state: "st-pages" });
  });

  it("from a request that cannot go back by redirect: the client's home page", async () => {
    const app = await brandedClient();
    const page = await expectPage(
      await new Browser().get(authorizePath(app.id, { redirect_uri: "https://elsewhere.example/cb" })),
      400,
      "Sign-in cannot start",
    );
    expect(page).toContain('<a href="https://brand.example/">Back to Brand Shop</a>');
    const unknown = await expectPage(
      await new Browser().get(authorizePath("no-such-client")),
      400,
      "Sign-in cannot start",
    );
    expect(unknown).not.toContain("Back to");
  });
});

describe("signing up", () => {
  it("asks for the profile fields the client asks its users for, and the account the link makes starts with them", async () => {
    const app = await brandedClient({
      autoApprove: true,
      fields: { email: true, names: true, birthday: "optional", gender: "optional", homeAddress: true },
    });
    const browser = new Browser();
    const page = await expectPage(
      await browser.get(authorizePath(app.id, { view: "signup" })),
      200,
      "Create an account",
    );
    expect(page).toMatch(/<input id="givenName" name="givenName" type="text" autocomplete="given-name" required=""/);
    expect(page).toContain('<label for="birthday">Date of birth <span class="hint">(optional)</span></label>');
    expect(page).toContain('<select id="gender" name="gender" autocomplete="sex">');
    // An address is left to the profile's own changes.
    expect(page).not.toContain("streetAddress");
    const email = `signup-${nextUser++}@example.org`;
    const missing = await browser.submit(page, { action: "link", email, familyName: "Nordmann" });
    const again = await expectPage(missing, 400, "Create an account");
    expect(again).toContain("Fill in the fields that are not marked optional.");
    expect(again).toContain('value="Nordmann"');
    const invalid = await browser.submit(page, {
      action: "link",
      email,
      givenName: "Kari",
      familyName: "Nordmann",
      birthday: "1 April 1984",
    });
    await expectPage(invalid, 400, "Create an account");

    const mail = mailbox();
    const sent = await browser.submit(page, {
      action: "link",
      email,
      givenName: "Kari",
      familyName: "Nordmann",
      birthday: "1984-04-01",
      gender: "female",
    });
    await expectPage(sent, 200, "Check your e-mail");
    const confirm = await expectPage(await browser.get(await mail.link(email)), 200, "Confirm sign-in");
    expect(redirectParameters(await browser.submit(confirm, {})).params.get("code")).not.toBeNull();
    const user = await openDatabase(env.DB).select().from(users).where(eq(users.email, email)).get();
    expect(user).toMatchObject({ givenName: "Kari", familyName: "Nordmann", birthday: "1984-04-01", gender: "female" });
  });
});

describe("the login page's other ways in", () => {
  it("links to the sign-up and forgotten-password views of the same request", async () => {
    const app = await brandedClient();
    const login = await expectPage(await new Browser().get(authorizePath(app.id)), 200, "Sign in");
    const signUp = unescape(/<a href="([^"]+)">New here\? Create an account<\/a>/.exec(login)![1]!);
    expect(new URL(signUp, "https://x").searchParams.get("view")).toBe("signup");
    await expectPage(await new Browser().get(signUp), 200, "Create an account");
  });
});
