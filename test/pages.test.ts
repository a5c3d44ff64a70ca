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
import { fetchWith, faultyEnv } from "./helpers/faults";
import { bearer, call, container, postForm, userTokenResponse } from "./helpers/http";
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

const WEBVIEW = "https://test.example/webview";

/** A session code for a branded web client, taken with a token of an app of the same merchant; `again` takes another. */
async function webviewCode() {
  const app = await createClient({ grantTypes: ["password"], autoApprove: true });
  const web = await brandedClient({ redirectUris: [CALLBACK, WEBVIEW] });
  const user = await createUser(nextUser++, { clients: [app.id] });
  const { access_token } = await userTokenResponse(user, { ...app, redirectUris: [CALLBACK] });
  const again = async () => {
    const res = await postForm(
      "/api/2/oauth/exchange",
      { clientId: web.id, type: "session", redirectUri: WEBVIEW },
      bearer(access_token),
    );
    return (await container(res)).data.code as string;
  };
  return { web, user, code: await again(), again };
}

const authorizePath = (clientId: string, extra: Record<string, string> = {}) =>
  `/oauth/authorize?${new URLSearchParams({ client_id: clientId, redirect_uri: CALLBACK, response_type: "code", state: "st-pages", ...extra })}`;

const unescape = (href: string) => href.replace(/&amp;/g, "&");

/** The page's language switch link to the locale of `hreflang` (sv-SE, nb-NO, en-US), if it has one. */
function languageLink(page: string, hreflang: string): string | undefined {
  const href = new RegExp(`<a href="([^"]+)" hreflang="${hreflang}">`).exec(page)?.[1];
  return href === undefined ? undefined : unescape(href);
}

/** The page's way back to the client named `client`, parsed. */
function wayBack(page: string, client = "Brand Shop"): URL {
  return new URL(unescape(new RegExp(`<a href="([^"]+)">Back to ${client}</a>`).exec(page)![1]!));
}

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
    expect(login).toContain('hreflang="sv-SE">Svenska</a>');
    const swedish = languageLink(login, "sv-SE")!;
    const switched = await expectPage(await new Browser().get(swedish), 200, "Logga in");
    expect(switched).toContain("Logga in för att fortsätta till Brand Shop.");
    expect(swedish).toContain(`client_id=${app.id}`);
    // The account page asks for a sign-in first, in any of the three.
    const account = await expectPage(await new Browser().get("/oauth/account?locale=nb_NO"), 401, "Innloggingsmetoder");
    expect(languageLink(account, "sv-SE")).toBe("/oauth/account?locale=sv_SE");
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
    const back = wayBack(expired);
    expect(`${back.origin}${back.pathname}`).toBe(FAILED);
    expect(Object.fromEntries(back.searchParams)).toMatchObject({ error: "access_denied", state: "st-pages" });
    // In the client's colours, and in the other languages.
    expect(expired).toContain(`<img class="logo" src="${LOGO}"`);
    expect(expired).toContain("button{background-color:#1f6f4a}");
    const norwegian = await expectPage(
      await browser.get(languageLink(expired, "nb-NO")!),
      410,
      "Denne lenken er utløpt",
    );
    expect(norwegian).toContain("Tilbake til Brand Shop");
  });

  it("from a request that cannot go back by redirect: the client's home page", async () => {
    const app = await brandedClient();
    const page = await expectPage(
      await new Browser().get(authorizePath(app.id, { redirect_uri: "https://elsewhere.example/cb" })),
      400,
      "Sign-in cannot start",
    );
    expect(page).toContain('<a href="https://brand.example/">Back to Brand Shop</a>');
    expect(page).toContain(`<img class="logo" src="${LOGO}"`);
    // Its links carry nothing of the refused request on: no language switch, which would.
    expect(page).not.toContain('class="languages"');
    const swedish = await expectPage(
      await new Browser().get(authorizePath(app.id, { redirect_uri: "https://elsewhere.example/cb", locale: "sv_SE" })),
      400,
      "Inloggningen kan inte starta",
    );
    expect(swedish).toContain("Tillbaka till Brand Shop");
    expect(swedish).toContain(`<img class="logo" src="${LOGO}"`);
    const unknown = await expectPage(
      await new Browser().get(authorizePath("no-such-client")),
      400,
      "Sign-in cannot start",
    );
    expect(unknown).not.toContain("Back to");
    expect(unknown).not.toContain('class="logo"');
  });

  it("from a webview code that opens nothing: the code's redirect URI with access_denied, in the client's colours", async () => {
    const { code, again } = await webviewCode();
    expect((await call(`/oauth/webview?code=${encodeURIComponent(code)}`, { redirect: "manual" })).status).toBe(303);
    const replay = `/oauth/webview?code=${encodeURIComponent(code)}`;
    const used = await expectPage(await call(replay), 410, "This link has already been used", { frameable: true });
    const back = wayBack(used);
    expect(`${back.origin}${back.pathname}`).toBe(WEBVIEW);
    expect(Object.fromEntries(back.searchParams)).toMatchObject({
      error: "access_denied",
      error_description: "The code has already been used",
    });
    expect(used).toContain(`<img class="logo" src="${LOGO}"`);
    const swedish = languageLink(used, "sv-SE")!;
    expect(swedish).toBe(`${replay}&locale=sv_SE`);
    await expectPage(await call(swedish), 410, "Den här länken har redan använts", { frameable: true });

    const late = await again();
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 31_000 });
    const expired = await expectPage(
      await call(`/oauth/webview?code=${encodeURIComponent(late)}`),
      410,
      "This link has expired",
      {
        frameable: true,
      },
    );
    expect(wayBack(expired).searchParams.get("error_description")).toBe("The code has expired");
    vi.useRealTimers();
    // A code that is no code names no client.
    const unknown = await expectPage(
      await call(`/oauth/webview?code=${"A".repeat(43)}`),
      400,
      "This link does not work",
      {
        frameable: true,
      },
    );
    expect(unknown).not.toContain("Back to");
    expect(unknown).not.toContain('class="logo"');
  });
});

describe("a webview code refused for its user", () => {
  it("links back to the app, and offers no language switch that would open the spent code again", async () => {
    const { code, user } = await webviewCode();
    await createUser(Number(user.row.userId), { ...user.row, status: -2 });
    const refused = await expectPage(
      await call(`/oauth/webview?code=${encodeURIComponent(code)}`),
      400,
      "This link does not work",
      { frameable: true },
    );
    expect(wayBack(refused).searchParams.get("error")).toBe("access_denied");
    expect(refused).not.toContain('class="languages"');
  });
});

describe("the webview's account switch", () => {
  it("wears the client's colours and switches language without spending the code", async () => {
    const first = await webviewCode();
    const browser = new Browser();
    expect((await browser.get(`/oauth/webview?code=${encodeURIComponent(first.code)}`)).status).toBe(303);
    const second = await webviewCode();
    const path = `/oauth/webview?code=${encodeURIComponent(second.code)}`;
    const asked = await expectPage(await browser.get(path), 200, "Switch account?");
    expect(asked).toContain(`<img class="logo" src="${LOGO}"`);
    const norwegian = await expectPage(await browser.get(languageLink(asked, "nb-NO")!), 200, "Bytte konto?");
    const switched = await browser.submit(norwegian, {});
    expect(switched.status).toBe(303);
    expect(switched.headers.get("Location")).toBe(WEBVIEW);
  });
});

describe("the sign-out pages' language switch", () => {
  it("links to the same sign-out, its return carried along and never the ID token hint", async () => {
    const app = await brandedClient({ postLogoutRedirectUris: ["https://test.example/bye"] });
    const user = await createUser(nextUser++, { clients: [app.id] });
    const browser = new Browser();
    const login = await expectPage(await browser.get(authorizePath(app.id)), 200, "Sign in");
    const consent = await browser.submit(login, { action: "login", email: user.email, password: user.password });
    expect(consent.status).toBe(303);
    const query = new URLSearchParams({
      client_id: app.id,
      post_logout_redirect_uri: "https://test.example/bye",
      state: "st-out",
      id_token_hint: "not.a.token",
    });
    const asked = await expectPage(await browser.get(`/oauth/logout?${query}`), 200, "Sign out?");
    const swedish = new URL(languageLink(asked, "sv-SE")!, "https://x");
    expect(Object.fromEntries(swedish.searchParams)).toEqual({
      client_id: app.id,
      post_logout_redirect_uri: "https://test.example/bye",
      state: "st-out",
      locale: "sv_SE",
    });
    const svenska = await expectPage(await browser.get(`${swedish.pathname}${swedish.search}`), 200, "Logga ut?");
    expect((await browser.submit(svenska, {})).headers.get("Location")).toBe("https://test.example/bye?state=st-out");

    const out = await expectPage(await new Browser().get("/oauth/logout?locale=nb_NO"), 200, "Du er logget ut");
    expect(languageLink(out, "en-US")).toBe("/oauth/logout?locale=en_US");
  });
});

describe("the try-again page's language switch", () => {
  it("links to the same address in another locale when a GET failed, and is absent after a form post", async () => {
    const app = await brandedClient();
    const { env: faulty } = faultyEnv({ DB: { kind: "outage" } });
    const path = authorizePath(app.id, { locale: "sv_SE" });
    const failed = await expectPage(await fetchWith(faulty, path), 503, "Vi kunde inte slutföra detta just nu");
    const english = new URL(languageLink(failed, "en-US")!, "https://x");
    expect(Object.fromEntries(english.searchParams)).toEqual({
      ...Object.fromEntries(new URL(path, "https://x").searchParams),
      locale: "en_US",
    });
    const posted = await fetchWith(faulty, "/oauth/logout", {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ client_id: app.id, redirect_uri: CALLBACK, csrf: "x" }).toString(),
    });
    expect(await expectPage(posted, 503, "We could not finish this just now")).not.toContain('class="languages"');
  });

  it("is left out where the address has an ID token hint, which a link must neither carry nor drop", async () => {
    const app = await brandedClient({ postLogoutRedirectUris: ["https://test.example/bye"] });
    const { env: faulty } = faultyEnv({ DB: { kind: "outage" } });
    const query = new URLSearchParams({
      id_token_hint: "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.sig",
      client_id: app.id,
      post_logout_redirect_uri: "https://test.example/bye",
    });
    const failed = await expectPage(
      await fetchWith(faulty, `/oauth/logout?${query}`),
      503,
      "We could not finish this just now",
    );
    expect(failed).not.toContain("eyJhbGciOiJub25lIn0");
    expect(failed).not.toContain('class="languages"');
    const authorize = authorizePath(app.id, { scope: "openid", id_token_hint: "eyJhbGciOiJub25lIn0.e30.sig" });
    const unavailable = await expectPage(await fetchWith(faulty, authorize), 503, "We could not finish this just now");
    expect(unavailable).not.toContain('class="languages"');
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
