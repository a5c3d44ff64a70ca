/**
 * The browser flows end to end: Debian's Chromium, driven by playwright-core, against the service
 * as `npm start` runs it with the demo data. The clients' own sites do not exist here, so every
 * request to an https site is answered by the test (the page a client would show) and recorded:
 * that is where the codes and errors arrive.
 */
import { mkdir } from "node:fs/promises";
import AxeBuilder from "@axe-core/playwright";
import { Secret, TOTP } from "otpauth";
import * as oidc from "openid-client";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import demo from "../../data/demo.json";
import { type RunningServer, startServer } from "../cli/running-server";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const [web, app, fjord] = demo.clients as unknown as [Client, Client, Client];
const [ingrid, erik, , aase] = demo.users as unknown as [DemoUser, DemoUser, DemoUser, DemoUser];
type Client = { id: string; secret: string; redirectUris: string[]; defaultRedirectUri: string | null };
type DemoUser = { userId: string; email: string; password: string };

let server: RunningServer;
let browser: Browser;

beforeAll(async () => {
  server = await startServer();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

const WIDTHS = [
  { name: "desktop", width: 1280, height: 800 },
  { name: "phone", width: 390, height: 844 },
] as const;

/** A locale and its pages' titles: login, consent, link sent, sign out, signed out, error, sign-up, link view. */
type PageTitles = [string, string, string, string, string, string, string, string, string];
type Width = (typeof WIDTHS)[number];

const CLIENT_PAGE = '<!doctype html><html lang="en"><title>Client</title><h1>Back at the client</h1></html>';

type Session = { context: BrowserContext; page: Page; arrivals: URL[] };

/**
 * A fresh browser profile. The clients' https sites do not exist here, and Playwright cannot
 * route a redirect's target, so the service's answers pass through the test: a 303 to an https
 * site is answered with a stand-in for that site's page (cookies kept) and recorded in `arrivals`.
 */
async function newContext(options: { locale?: string } = {}): Promise<Session> {
  const context = await browser.newContext(options);
  const arrivals: URL[] = [];
  await context.route(
    (url) => url.origin === server.base,
    async (route) => {
      const response = await route.fetch({ maxRedirects: 0 });
      const location = response.headers()["location"];
      if (response.status() !== 303 || !location?.startsWith("https://")) return route.fulfill({ response });
      arrivals.push(new URL(location));
      const cookies = response.headersArray().filter(({ name }) => name.toLowerCase() === "set-cookie");
      return route.fulfill({
        status: 200,
        contentType: "text/html",
        body: CLIENT_PAGE,
        headers: Object.fromEntries(cookies.map(({ name, value }) => [name, value])),
      });
    },
  );
  return { context, page: await context.newPage(), arrivals };
}

function authorizeUrl(client: Client, extra: Record<string, string> = {}, path = "/oauth/authorize") {
  const query = new URLSearchParams({
    client_id: client.id,
    redirect_uri: client.redirectUris[0]!,
    response_type: "code",
    state: "e2e-state",
    ...extra,
  });
  return `${server.base}${path}?${query}`;
}

/** Waits until the browser is back at the client's site; the query it arrived with. */
async function backAtClient({ page, arrivals }: Session, client: Client, uri = client.redirectUris[0]!) {
  await page.getByRole("heading", { name: "Back at the client" }).waitFor();
  const arrival = arrivals.at(-1)!;
  expect(`${arrival.origin}${arrival.pathname}`).toBe(uri);
  return arrival.searchParams;
}

async function redeem(client: Client, code: string) {
  const res = await fetch(`${server.base}/oauth/token`, {
    method: "POST",
    headers: {
      "Content-Type": "application/x-www-form-urlencoded",
      Authorization: `Basic ${btoa(`${client.id}:${client.secret}`)}`,
    },
    body: new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: client.redirectUris[0]! }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function signIn(page: Page, user: DemoUser) {
  await page.getByLabel("E-mail address").fill(user.email);
  await page.getByLabel("Password").fill(user.password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
}

async function expectNoAxeViolations(page: Page) {
  const { violations } = await new AxeBuilder({ page }).analyze();
  expect(violations.map((v) => `${v.id}: ${v.help}`)).toEqual([]);
}

/** How many mails the local mailer printed for `email` so far. */
function mailCount(email: string): number {
  return server.output().split(`mail to ${email}:`).length - 1;
}

/**
 * The newest sign-in link the local mailer printed for `email`, waiting for it up to 5 s; a link of
 * a mail after the first `after` mails to the address.
 */
async function mailedLink(email: string, after = 0): Promise<string> {
  for (let waited = 0; waited < 5_000; waited += 100) {
    const mails = server.output().split(`mail to ${email}:`);
    const link = /http:\/\/localhost:\d+\/oauth\/signin\?token=[A-Za-z0-9_-]+/.exec(mails.at(-1) ?? "");
    if (mails.length > 1 + after && link) return link[0];
    await new Promise((done) => setTimeout(done, 100));
  }
  throw new Error(`no link was mailed to ${email}`);
}

describe("browser flows in Chromium", () => {
  // First: erik has not yet granted the app access, so each locale's run sees its consent page.
  describe.each(
    [
      [
        "en_US",
        "Sign in",
        "Allow access",
        "Check your e-mail",
        "Sign out?",
        "You are signed out",
        "Sign-in cannot start",
        "Create an account",
        "Sign in with a link",
      ],
      [
        "nb_NO",
        "Logg inn",
        "Gi tilgang",
        "Sjekk e-posten din",
        "Logge ut?",
        "Du er logget ut",
        "Innloggingen kan ikke starte",
        "Opprett en konto",
        "Logg inn med en lenke",
      ],
      [
        "sv_SE",
        "Logga in",
        "Ge åtkomst",
        "Kolla din e-post",
        "Logga ut?",
        "Du är utloggad",
        "Inloggningen kan inte starta",
        "Skapa ett konto",
        "Logga in med en länk",
      ],
    ].flatMap((texts) => WIDTHS.map((width): [...PageTitles, Width] => [...(texts as PageTitles), width])),
  )(
    "every page in %s",
    (
      ...[
        locale,
        signInTitle,
        consentTitle,
        sentTitle,
        signOutTitle,
        signedOutTitle,
        errorTitle,
        signUpTitle,
        linkTitle,
        width,
      ]
    ) => {
      it(`has no accessibility violations (axe-core), ${width.name} width`, async () => {
        const session = await newContext({ locale: locale.replace("_", "-") });
        const { context, page } = session;
        await page.setViewportSize(width);
        const heading = (name: string) => page.getByRole("heading", { name, level: 1 }).waitFor();

        await page.goto(authorizeUrl(app, { locale }));
        await heading(signInTitle);
        await expectNoAxeViolations(page);

        await page.locator("#email").fill(erik.email);
        await page.locator("#password").fill("a wrong password");
        await page.locator('button[value="login"]').click();
        await page.getByRole("alert").waitFor();
        await expectNoAxeViolations(page);

        await page.locator("#password").fill(erik.password);
        await page.locator('button[value="login"]').click();
        await heading(consentTitle);
        await expectNoAxeViolations(page);
        // The account page, and its authenticator set-up page, while the sign-in is recent.
        await page.goto(`${server.base}/oauth/account?locale=${locale}`);
        await page.locator("h2").first().waitFor();
        await expectNoAxeViolations(page);
        await page.locator('button[value="set-up"]').click();
        await page.locator("code.key").waitFor();
        await expectNoAxeViolations(page);
        await page.goto(authorizeUrl(app, { locale }));
        await heading(consentTitle);
        // Denied, so that the next locale's run sees the consent page too.
        await page.locator('button[value="deny"]').click();
        expect((await backAtClient(session, app)).get("error")).toBe("access_denied");

        await page.goto(authorizeUrl(fjord, { locale }));
        const address = `axe-${locale.toLowerCase()}@example.org`;
        await page.locator("#email").fill(address);
        await page.locator('button[value="link"]').click();
        await heading(sentTitle);
        await expectNoAxeViolations(page);

        await page.goto(await mailedLink(address));
        await page.locator("form button").waitFor();
        await expectNoAxeViolations(page);

        await page.goto(`${server.base}/oauth/logout?locale=${locale}`);
        await heading(signOutTitle);
        await expectNoAxeViolations(page);
        await page.locator("form button").click();
        await heading(signedOutTitle);
        await expectNoAxeViolations(page);

        await page.goto(`${server.base}/oauth/authorize?client_id=nobody&locale=${locale}`);
        await heading(errorTitle);
        await expectNoAxeViolations(page);

        await page.goto(`${server.base}/oauth/webview?code=not-a-code&locale=${locale}`);
        await expectNoAxeViolations(page);

        // SPiD's sign-up and link views (/flow/signup, /flow/signin).
        await page.goto(authorizeUrl(fjord, { locale }, "/flow/signup"));
        await heading(signUpTitle);
        await expectNoAxeViolations(page);
        await page.goto(authorizeUrl(fjord, { locale }, "/flow/signin"));
        await heading(linkTitle);
        await expectNoAxeViolations(page);
        await page.goto(authorizeUrl(fjord, { locale }, "/flow/password"));
        await page.locator('button[value="reset"]').waitFor();
        await expectNoAxeViolations(page);
        await context.close();
      });
    },
  );
  it("authorize → login → consent → back with a code → token, then single sign-on into a second client", async () => {
    const session = await newContext();
    const { context, page } = session;
    await page.goto(authorizeUrl(app));
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await signIn(page, erik);
    await page.getByRole("button", { name: "Allow" }).click();
    const params = await backAtClient(session, app);
    expect(params.get("state")).toBe("e2e-state");
    const tokens = await redeem(app, params.get("code")!);
    expect(tokens.status).toBe(200);
    expect(tokens.body.user_id).toBe(erik.userId);

    // The Web client has single sign-on: the authorize request itself answers with the code.
    await page.goto(authorizeUrl(web));
    const sso = await backAtClient(session, web);
    expect((await redeem(web, sso.get("code")!)).body.user_id).toBe(erik.userId);
    await context.close();
  });

  it("OpenID Connect with openid-client: discovery, code flow with PKCE and nonce, ID token, userinfo, refresh, logout", async () => {
    const config = await oidc.discovery(new URL(server.base), web.id, undefined, oidc.ClientSecretBasic(web.secret), {
      execute: [oidc.allowInsecureRequests],
    });
    const verifier = oidc.randomPKCECodeVerifier();
    const nonce = oidc.randomNonce();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: web.redirectUris[0]!,
      scope: "openid profile email",
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      nonce,
      state,
    });
    const session = await newContext();
    const { context, page, arrivals } = session;
    await page.goto(url.href);
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await signIn(page, ingrid);
    await backAtClient(session, web);
    const tokens = await oidc.authorizationCodeGrant(config, arrivals.at(-1)!, {
      pkceCodeVerifier: verifier,
      expectedNonce: nonce,
      expectedState: state,
      idTokenExpected: true,
    });
    const claims = tokens.claims()!;
    expect(claims).toMatchObject({ iss: server.base, aud: web.id, nonce, amr: ["pwd"] });
    const userinfo = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
    expect(userinfo).toMatchObject({ sub: claims.sub, legacy_user_id: ingrid.userId, email: ingrid.email });
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.claims()).toMatchObject({ sub: claims.sub, auth_time: claims.auth_time, sid: claims.sid });

    // prompt=select_account: the signed-in user is offered, under axe, and continuing needs no password.
    await page.goto(authorizeUrl(web, { scope: "openid", prompt: "select_account" }));
    await page.getByRole("heading", { name: "Choose an account" }).waitFor();
    await expectNoAxeViolations(page);
    await page.getByRole("button", { name: `Continue as ${ingrid.email}` }).click();
    expect((await backAtClient(session, web)).get("code")).toBeTruthy();

    // RP-initiated logout with the ID token as the hint: no question asked, back with the state.
    const endSession = oidc.buildEndSessionUrl(config, {
      id_token_hint: tokens.id_token!,
      post_logout_redirect_uri: "https://www.nordicdaily.example/",
      state: "bye",
    });
    await page.goto(endSession.href);
    expect((await backAtClient(session, web, "https://www.nordicdaily.example/")).get("state")).toBe("bye");
    await page.goto(authorizeUrl(web, { scope: "openid", prompt: "none" }));
    expect((await backAtClient(session, web)).get("error")).toBe("login_required");
    await context.close();
  });

  it("signs in with a link mailed from the login page", async () => {
    const session = await newContext();
    const { context, page } = session;
    await page.goto(authorizeUrl(web));
    await page.getByLabel("E-mail address").fill(ingrid.email);
    await page.getByRole("button", { name: "E-mail me a sign-in link" }).click();
    await page.getByRole("heading", { name: "Check your e-mail" }).waitFor();
    await page.goto(await mailedLink(ingrid.email));
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    const params = await backAtClient(session, web);
    expect(params.get("state")).toBe("e2e-state");
    expect((await redeem(web, params.get("code")!)).body.user_id).toBe(ingrid.userId);
    await context.close();
  });

  it("signs up through SPiD's /flow/signup: a new address, a mailed link, back with a code", async () => {
    const session = await newContext();
    const { context, page } = session;
    const address = `new-${Date.now()}@example.org`;
    await page.goto(authorizeUrl(fjord, { v: "2.5.2" }, "/flow/signup"));
    await page.getByRole("heading", { name: "Create an account" }).waitFor();
    expect(await page.locator("#password").count()).toBe(0);
    await page.getByLabel("E-mail address").fill(address);
    await page.getByRole("button", { name: "Create account" }).click();
    await page.getByRole("heading", { name: "Check your e-mail" }).waitFor();
    await page.goto(await mailedLink(address));
    await page.locator("form button").click();
    const params = await backAtClient(session, fjord);
    expect(params.get("state")).toBe("e2e-state");
    expect((await redeem(fjord, params.get("code")!)).status).toBe(200);
    await context.close();
  });

  it("signs in with an internationalized address typed into the login page", async () => {
    expect(aase.email).toBe("åse.ærø@bücher.example");
    const session = await newContext();
    const { context, page } = session;
    await page.goto(authorizeUrl(web));
    // Typed key by key, as a person would: a browser's checks of an e-mail field apply to typing.
    await page.getByLabel("E-mail address").pressSequentially(aase.email);
    await page.getByLabel("Password").fill(aase.password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    const params = await backAtClient(session, web);
    expect((await redeem(web, params.get("code")!)).body.user_id).toBe(aase.userId);
    await context.close();
  });

  it("handles a bad redirect URI by the three rules, and shows a page when nothing is safe", async () => {
    const session = await newContext();
    const { context, page } = session;
    await page.goto(authorizeUrl(web, { redirect_uri: "https://evil.example/cb" }));
    const params = await backAtClient(session, web, web.defaultRedirectUri!);
    expect(params.get("error")).toBe("redirect_uri_mismatch");
    expect(params.get("state")).toBe("e2e-state");

    // Fjord has no default redirect URI: nowhere safe to send the failure.
    const res = await page.goto(authorizeUrl(fjord, { redirect_uri: "https://evil.example/cb" }));
    expect(res!.status()).toBe(400);
    expect(new URL(page.url()).origin).toBe(server.base);
    await page.getByRole("heading", { name: "Sign-in cannot start" }).waitFor();
    await context.close();
  });

  /** A session code for the app client, for `user`, by way of a password grant at the web client. */
  async function sessionCode(user: DemoUser): Promise<string> {
    const password = await fetch(`${server.base}/oauth/token`, {
      method: "POST",
      headers: {
        "Content-Type": "application/x-www-form-urlencoded",
        Authorization: `Basic ${btoa(`${web.id}:${web.secret}`)}`,
      },
      body: new URLSearchParams({
        grant_type: "password",
        username: user.email,
        password: user.password,
        redirect_uri: web.redirectUris[0]!,
      }),
    });
    const { access_token } = (await password.json()) as { access_token: string };
    const exchange = await fetch(`${server.base}/api/2/oauth/exchange`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", Authorization: `Bearer ${access_token}` },
      body: new URLSearchParams({ clientId: app.id, type: "session", redirectUri: app.redirectUris[0]! }),
    });
    const exchanged = (await exchange.json()) as { data: { code: string } | null; error: unknown };
    if (!exchanged.data) throw new Error(`exchange: ${JSON.stringify(exchanged.error)}`);
    return exchanged.data.code;
  }

  it("opens a webview session from a session code, and the webview is then signed in", async () => {
    const code = await sessionCode(ingrid);

    const session = await newContext();
    const { context, page } = session;
    await page.goto(`${server.base}/oauth/webview?code=${encodeURIComponent(code)}`);
    await backAtClient(session, app);
    // Signed in: the SSO client lets the webview straight through.
    await page.goto(authorizeUrl(web));
    expect((await redeem(web, (await backAtClient(session, web)).get("code")!)).body.user_id).toBe(ingrid.userId);
    // Another user's code asks before switching, names both, and switches on the click.
    await page.goto(`${server.base}/oauth/webview?code=${encodeURIComponent(await sessionCode(erik))}`);
    await page.getByRole("heading", { name: "Switch account?", level: 1 }).waitFor();
    expect(await page.textContent("main")).toContain(`signed in as ${ingrid.email}`);
    await expectNoAxeViolations(page);
    await page.getByRole("button", { name: "Switch account" }).click();
    await backAtClient(session, app);
    await page.goto(authorizeUrl(web));
    expect((await redeem(web, (await backAtClient(session, web)).get("code")!)).body.user_id).toBe(erik.userId);
    // The first code worked once.
    const reused = await page.goto(`${server.base}/oauth/webview?code=${encodeURIComponent(code)}`);
    expect(reused!.status()).toBe(410);
    await context.close();
  });
});

/** The code an authenticator app shows for `secret` (base32) at `time` (Unix ms). */
function totpCode(secret: string, time = Date.now()): string {
  return new TOTP({ secret: Secret.fromBase32(secret.replace(/\s/g, "")) }).generate({ timestamp: time });
}

/** The ID token's claims, unverified: the token came straight from the token endpoint. */
function idTokenClaims(tokens: Record<string, unknown>): Record<string, unknown> {
  return JSON.parse(Buffer.from(String(tokens.id_token).split(".")[1]!, "base64url").toString());
}

describe("factors, recovery and the pages around them, in Chromium", () => {
  it("passkeys: added on the account page with a virtual authenticator, signed in with by autofill (no address typed), removed", async () => {
    const session = await newContext();
    const { context, page } = session;
    const cdp = await context.newCDPSession(page);
    await cdp.send("WebAuthn.enable");
    await cdp.send("WebAuthn.addVirtualAuthenticator", {
      options: {
        protocol: "ctap2",
        transport: "internal",
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
        automaticPresenceSimulation: true,
      },
    });
    await page.goto(authorizeUrl(web));
    await signIn(page, ingrid);
    await backAtClient(session, web);

    await page.goto(`${server.base}/oauth/account`);
    await page.getByRole("heading", { name: "Sign-in methods", level: 1 }).waitFor();
    await expectNoAxeViolations(page);
    await page.getByLabel("Name for the new passkey").fill("E2E laptop");
    await page.getByRole("button", { name: "Add a passkey" }).click();
    await page.getByText("The passkey was added.").waitFor();
    expect(await page.locator(".passkeys li").textContent()).toContain("E2E laptop");

    // Signed out, then in again with the passkey alone, no address typed: the login page's
    // conditional request (the browser's autofill of passkeys), which the virtual authenticator,
    // present and verified, answers at once.
    await page.goto(`${server.base}/oauth/logout`);
    await page.locator("form button").click();
    await page.getByRole("heading", { name: "You are signed out" }).waitFor();
    await page.goto(authorizeUrl(web, { scope: "openid", nonce: "n-passkey" }));
    const params = await backAtClient(session, web);
    const tokens = await redeem(web, params.get("code")!);
    expect(tokens.body.user_id).toBe(ingrid.userId);
    const claims = idTokenClaims(tokens.body);
    expect(claims.acr).toBe("otp");
    expect(claims.amr).toEqual([expect.stringMatching(/^(hwk|swk)$/), "user", "mfa"]);

    // Removed on the account page (a recent sign-in), after which it signs in no more.
    await page.goto(`${server.base}/oauth/account`);
    await page.getByRole("button", { name: "Remove E2E laptop" }).click();
    await page.getByText("The passkey was removed.").waitFor();
    await page.goto(`${server.base}/oauth/logout`);
    await page.locator("form button").click();
    await page.getByRole("heading", { name: "You are signed out" }).waitFor();
    await page.goto(authorizeUrl(web));
    await page.getByText("This passkey is not known here any more.").waitFor();
    // That page starts no autofill request again; its button asks the authenticator, with the same answer.
    const posted = page.waitForRequest(
      (request) => request.method() === "POST" && request.postData()!.includes("action=passkey"),
    );
    await page.getByRole("button", { name: "Sign in with a passkey" }).click();
    expect(new URLSearchParams((await posted).postData()!).get("credential")).toContain('"type":"public-key"');
    await page.getByText("This passkey is not known here any more.").waitFor();
    await expectNoAxeViolations(page);
    await context.close();
  });

  it("a second factor: step-up by acr_values sets one up; codes computed here, a replayed one refused, a recovery code once; axe on each page in every locale and width", async () => {
    const session = await newContext();
    const { context, page } = session;
    await page.goto(authorizeUrl(web, { acr_values: "otp", scope: "openid" }));
    await signIn(page, aase);
    await page.getByRole("heading", { name: "Set up a second factor" }).waitFor();
    await expectNoAxeViolations(page);
    const secret = (await page.locator("code.key").textContent())!;
    // Kept for the replay below, not computed again: by then the clock may be in the next step,
    // whose code is a new one.
    const enrolment = totpCode(secret);
    await page.getByLabel("Code from the app").fill(enrolment);
    await page.getByRole("button", { name: "Turn on" }).click();
    await page.getByRole("heading", { name: "Save your recovery codes" }).waitFor();
    await expectNoAxeViolations(page);
    const recovery = await page.locator(".codes code").allTextContents();
    expect(recovery).toHaveLength(10);
    await page.getByRole("button", { name: "I have saved them, continue" }).click();
    const stepped = await redeem(web, (await backAtClient(session, web)).get("code")!);
    expect(idTokenClaims(stepped.body)).toMatchObject({ acr: "otp", amr: ["pwd", "otp", "mfa"] });
    await context.close();

    // Every later sign-in asks for the code: the enrolment's code again is refused, the next one taken.
    const again = await newContext();
    await again.page.goto(authorizeUrl(web));
    await signIn(again.page, aase);
    await again.page.getByRole("heading", { name: "Enter your code" }).waitFor();
    await again.page.getByLabel("Code").fill(enrolment);
    await again.page.getByRole("button", { name: "Continue" }).click();
    await again.page.getByText("That code is not right, or it was used already.").waitFor();
    await expectNoAxeViolations(again.page);
    await again.page.getByLabel("Code").fill(totpCode(secret, Date.now() + 30_000));
    await again.page.getByRole("button", { name: "Continue" }).click();
    await backAtClient(again, web);
    await again.context.close();

    // A recovery code signs in once.
    for (const expected of ["signed in", "refused"] as const) {
      const attempt = await newContext();
      await attempt.page.goto(authorizeUrl(web));
      await signIn(attempt.page, aase);
      await attempt.page.getByLabel("Code").fill(recovery[0]!);
      await attempt.page.getByRole("button", { name: "Continue" }).click();
      if (expected === "signed in") await backAtClient(attempt, web);
      else await attempt.page.getByText("That code is not right, or it was used already.").waitFor();
      await attempt.context.close();
    }

    // The code page, and the account page's set-up and recovery-code pages, in each locale and width.
    for (const locale of ["en_US", "nb_NO", "sv_SE"]) {
      for (const width of WIDTHS) {
        const visit = await newContext({ locale: locale.replace("_", "-") });
        await visit.page.setViewportSize(width);
        await visit.page.goto(authorizeUrl(app, { locale }));
        await visit.page.locator("#email").fill(aase.email);
        await visit.page.locator("#password").fill(aase.password);
        await visit.page.locator('button[value="login"]').click();
        await visit.page.locator("#code").waitFor();
        await expectNoAxeViolations(visit.page);
        await visit.context.close();
      }
    }
  });

  it("forgot password and sign-up from the login page, end to end with the local mailer", async () => {
    // Sign-up from the login page's link: a new account, by a mailed link.
    const session = await newContext();
    const { context, page } = session;
    const address = `reset-${Date.now()}@example.org`;
    await page.goto(authorizeUrl(web));
    await page.getByRole("link", { name: "New here? Create an account" }).click();
    await page.getByRole("heading", { name: "Create an account" }).waitFor();
    await page.getByLabel("E-mail address").fill(address);
    // The Web client asks its users for their names and display name (its fields), the birthday optionally.
    await page.getByLabel("First name").fill("Reset");
    await page.getByLabel("Last name").fill("Tester");
    await page.getByLabel("Display name").fill("Reset T.");
    await expectNoAxeViolations(page);
    await page.getByRole("button", { name: "Create account" }).click();
    await page.getByRole("heading", { name: "Check your e-mail" }).waitFor();
    await page.goto(await mailedLink(address));
    await page.locator("form button").click();
    await backAtClient(session, web);
    await context.close();

    // The new account has no password: "Forgot your password?" sets one.
    const reset = await newContext();
    await reset.page.goto(authorizeUrl(app));
    await reset.page.getByRole("link", { name: "Forgot your password?" }).click();
    await reset.page.getByRole("heading", { name: "Set a new password" }).waitFor();
    await expectNoAxeViolations(reset.page);
    await reset.page.getByLabel("E-mail address").fill(address);
    const mailed = mailCount(address);
    await reset.page.getByRole("button", { name: "E-mail me a link" }).click();
    await reset.page.getByRole("heading", { name: "Check your e-mail" }).waitFor();
    await reset.page.goto(await mailedLink(address, mailed));
    await reset.page.getByRole("heading", { name: "Set a new password" }).waitFor();
    await expectNoAxeViolations(reset.page);
    await reset.page.getByLabel("New password").fill("a new e2e passphrase");
    await reset.page.getByRole("button", { name: "Set password and continue" }).click();
    await reset.page.getByRole("button", { name: "Allow" }).click();
    await backAtClient(reset, app);
    await reset.context.close();

    const login = await newContext();
    await login.page.goto(authorizeUrl(app));
    await signIn(login.page, { userId: "", email: address, password: "a new e2e passphrase" });
    await backAtClient(login, app);
    await login.context.close();
  });

  it("the branded client's login page: axe and keyboard alone in every locale and width, and screenshots kept", async () => {
    await mkdir("dist/screenshots", { recursive: true });
    for (const locale of ["en_US", "nb_NO", "sv_SE"]) {
      for (const width of WIDTHS) {
        const session = await newContext({ locale: locale.replace("_", "-") });
        const { context, page } = session;
        await context.route("https://shop.fjord.example/logo.svg", (route) =>
          route.fulfill({ contentType: "image/svg+xml", body: FJORD_LOGO }),
        );
        await page.setViewportSize(width);
        await page.goto(authorizeUrl(fjord, { locale }));
        await page.locator("img.logo").waitFor();
        expect(
          await page.locator("img.logo").evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth),
        ).toBeGreaterThan(0);
        await expectNoAxeViolations(page);
        if (locale === "en_US")
          await page.screenshot({ path: `dist/screenshots/login-fjord-${width.name}.png`, fullPage: true });
        // The keyboard alone: the address field first after the language switch, then the password, then signing in.
        await page.locator("#email").focus();
        await page.keyboard.type("nobody@example.org");
        await page.keyboard.press("Tab");
        await page.keyboard.type("wrong");
        await page.keyboard.press("Enter");
        await page.getByRole("alert").waitFor();
        await expectNoAxeViolations(page);
        await context.close();
      }
    }
  });
});

const FJORD_LOGO =
  '<svg xmlns="http://www.w3.org/2000/svg" width="192" height="48" viewBox="0 0 192 48">' +
  '<path d="M4 40 L20 12 L30 28 L38 18 L52 40 Z" fill="#1f6f4a"/>' +
  '<text x="60" y="33" font-family="sans-serif" font-size="20" fill="#1d2b24">Fjord Outdoor</text></svg>';
