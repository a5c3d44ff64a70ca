import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { openDatabase } from "../src/db/client";
import { clients } from "../src/db/schema";
import { s256Challenge } from "../src/kv/codes";
import { Browser, expectPage, redirectParameters } from "./helpers/browser";
import { BASE, basicAuth, call, expectOAuthError, postForm } from "./helpers/http";
import { createClient, createUser } from "./helpers/seed";

const CALLBACK = "https://test.example/callback";
const OTHER = "https://test.example/other";
const FAILURE = "https://test.example/failed";
const DEFAULT = "https://test.example/home";
const VERIFIER = "a-code-verifier-of-forty-three-characters-or-more-0123456789";

let nextUser = 9_300 + Math.floor(Math.random() * 50) * 10;

async function webClient(overrides: Record<string, unknown> = {}) {
  return createClient({
    name: "Fjord Shop",
    redirectUris: [CALLBACK, OTHER, FAILURE, DEFAULT],
    defaultRedirectUri: DEFAULT,
    grantTypes: ["authorization_code", "refresh_token"],
    fields: { email: true, birthday: "optional", phoneNumber: false },
    ...overrides,
  });
}

function authorizePath(clientId: string, extra: Record<string, string> = {}) {
  const params = new URLSearchParams({
    client_id: clientId,
    redirect_uri: CALLBACK,
    response_type: "code",
    state: "st-123",
    ...extra,
  });
  return `/oauth/authorize?${params}`;
}

/** Signs in on the login page with e-mail and password. */
async function logIn(browser: Browser, clientId: string, user: { email: string; password: string }, extra = {}) {
  const page = await expectPage(await browser.get(authorizePath(clientId, extra)), 200, "Sign in");
  return browser.submit(page, { action: "login", email: user.email, password: user.password, remember: "1" });
}

async function redeem(client: { id: string; secret: string }, code: string, extra: Record<string, string> = {}) {
  return postForm(
    "/oauth/token",
    { grant_type: "authorization_code", code, redirect_uri: CALLBACK, ...extra },
    basicAuth(client.id, client.secret),
  );
}

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe("GET /oauth/authorize: login, consent, code", () => {
  it("logs in, asks for consent listing the client's fields, and returns a code that becomes tokens", async () => {
    const client = await webClient();
    const user = await createUser(nextUser++, { clients: [] });
    const browser = new Browser();
    const login = await expectPage(await browser.get(authorizePath(client.id)), 200, "Sign in");
    expect(login).toContain("Sign in to continue to Fjord Shop.");
    expect(login).toContain('autocomplete="current-password"');
    expect(login).toMatch(/<label for="email">E-mail address<\/label>/);
    expect(browser.cookies.has("__Host-csrf")).toBe(true);

    const consentRes = await browser.submit(login, {
      action: "login",
      email: user.email,
      password: user.password,
      remember: "1",
    });
    const consent = await expectPage(consentRes, 200, "Allow access");
    expect(browser.cookies.has("__Host-session")).toBe(true);
    // Asked for: email and birthday (a text setting); phoneNumber is set to false.
    expect(consent).toContain("<li>Your e-mail address</li>");
    expect(consent).toContain("<li>Your birthday</li>");
    expect(consent).not.toContain("phone number");

    const { base, params } = redirectParameters(await browser.submit(consent, { action: "approve" }));
    expect(base).toBe(CALLBACK);
    expect(params.get("state")).toBe("st-123");
    expect(params.get("iss")).toBe(BASE);
    const code = params.get("code")!;
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const tokens = await redeem(client, code);
    expect(tokens.status).toBe(200);
    const body = (await tokens.json()) as { user_id: string; refresh_token: string };
    expect(body.user_id).toBe(user.row.userId);
    // Single use; the second try also revokes what the first got.
    await expectOAuthError(await redeem(client, code), "invalid_grant", "already been used");
    const refreshed = await postForm(
      "/oauth/token",
      { grant_type: "refresh_token", refresh_token: body.refresh_token },
      basicAuth(client.id, client.secret),
    );
    await expectOAuthError(refreshed, "invalid_grant");
  });

  it("remembers consent: the next login at the client goes straight back with a code", async () => {
    const client = await webClient();
    const user = await createUser(nextUser++, { clients: [] });
    const first = new Browser();
    const consent = await (await logIn(first, client.id, user)).text();
    redirectParameters(await first.submit(consent, { action: "approve" }));
    const again = await logIn(new Browser(), client.id, user);
    expect(redirectParameters(again).params.get("code")).toBeTruthy();
  });

  it("sends a denial to the failure URI as access_denied, with state", async () => {
    const client = await webClient();
    const user = await createUser(nextUser++, { clients: [] });
    const browser = new Browser();
    const consent = await (await logIn(browser, client.id, user, { failure_redirect_uri: FAILURE })).text();
    const { base, params } = redirectParameters(await browser.submit(consent, { action: "deny" }));
    expect(base).toBe(FAILURE);
    expect(params.get("error")).toBe("access_denied");
    expect(params.get("state")).toBe("st-123");
  });

  it("skips consent for an autoApprove client", async () => {
    const client = await webClient({ autoApprove: true });
    const user = await createUser(nextUser++, { clients: [] });
    const res = await logIn(new Browser(), client.id, user);
    expect(res.headers.get("Referrer-Policy")).toBe("no-referrer");
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    expect(redirectParameters(res).params.get("code")).toBeTruthy();
  });

  it("answers a wrong password and an unknown address with the same page, and never a session", async () => {
    const client = await webClient();
    const user = await createUser(nextUser++);
    const texts = [];
    for (const [email, password] of [
      [user.email, "not the password"],
      [`nobody-${nextUser}@example.org`, "not the password"],
    ] as const) {
      const browser = new Browser();
      const login = await (await browser.get(authorizePath(client.id))).text();
      const res = await browser.submit(login, { action: "login", email, password });
      const page = await expectPage(res, 401, "Sign in");
      expect(page).toContain('role="alert">The e-mail address or the password is wrong.');
      expect(browser.cookies.has("__Host-session")).toBe(false);
      // Less the values made for each page: the CSRF token, the passkey challenge and its options.
      texts.push(page.replace(/(value|data-options)="[^"]*"/g, ""));
    }
    expect(texts[0]).toBe(texts[1]);
  });

  it("holds a network's password guesses as the password grant does, and shares the account's count with it", async () => {
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() });
    const client = await webClient({ grantTypes: ["authorization_code", "password"], autoApprove: true });
    const user = await createUser(nextUser++);
    const browser = new Browser({ "CF-Connecting-IP": "198.51.100.30" });
    const login = await (await browser.get(authorizePath(client.id))).text();
    for (let attempt = 0; attempt < 5; attempt++) {
      const res = await browser.submit(login, { action: "login", email: user.email, password: "wrong" });
      await expectPage(res, 401, "Sign in");
    }
    // The right password is refused too while this network is held.
    const refused = await browser.submit(login, { action: "login", email: user.email, password: user.password });
    await expectPage(refused, 429, "Sign in");
    expect(Number(refused.headers.get("Retry-After"))).toBeGreaterThan(60);

    // The client's server is another network, held by its own failures alike...
    const grant = (password: string) =>
      postForm(
        "/oauth/token",
        { grant_type: "password", username: user.email, password, redirect_uri: CALLBACK },
        { ...basicAuth(client.id, client.secret), "CF-Connecting-IP": "192.0.2.60" },
      );
    for (let attempt = 0; attempt < 5; attempt++) expect((await grant("wrong")).status).toBe(400);
    const held = await grant(user.password);
    expect(held.status).toBe(420);
    expect(Number(held.headers.get("Retry-After"))).toBeGreaterThan(60);
    // ...and its five make the account's ten: a third network waits a second, with the right password too.
    const elsewhere = new Browser({ "CF-Connecting-IP": "198.51.100.31" });
    const page = await (await elsewhere.get(authorizePath(client.id))).text();
    const right = { action: "login", email: user.email, password: user.password };
    const waiting = await elsewhere.submit(page, right);
    await expectPage(waiting, 429, "Sign in");
    expect(waiting.headers.get("Retry-After")).toBe("1");
    vi.setSystemTime(Date.now() + 1000);
    expect(redirectParameters(await elsewhere.submit(page, right)).params.get("code")).toBeTruthy();
  });

  it("refuses a post without the CSRF token, or with another browser's, and signs nobody in", async () => {
    const client = await webClient({ autoApprove: true });
    const user = await createUser(nextUser++);
    const victim = new Browser();
    const attacker = new Browser();
    const attackerPage = await (await attacker.get(authorizePath(client.id))).text();
    await victim.get(authorizePath(client.id));
    const fields = { action: "login", email: user.email, password: user.password };
    // The attacker's form, posted from the victim's browser: the token does not match the cookie.
    const forged = await victim.submit(attackerPage, fields);
    const page = await expectPage(forged, 403, "Sign in");
    expect(page).toContain("The page had expired. Please try again.");
    expect(victim.cookies.has("__Host-session")).toBe(false);
    // No cookie at all (a cross-site post carries no SameSite=Lax cookie).
    const bare = await new Browser().submit(attackerPage, fields);
    expect(bare.status).toBe(403);
  });

  it("is a page with a strict policy: no script, no framing, localized by parameter or browser", async () => {
    const client = await webClient();
    const norwegian = await expectPage(
      await new Browser().get(authorizePath(client.id, { locale: "nb_NO" })),
      200,
      "Logg inn",
    );
    expect(norwegian).toContain('<html lang="nb-NO">');
    const swedish = await new Browser({ "Accept-Language": "sv-SE,sv;q=0.9,en;q=0.5" }).get(authorizePath(client.id));
    expect(await expectPage(swedish, 200, "Logga in")).toContain('<html lang="sv-SE">');
    expect(swedish.headers.get("X-Frame-Options")).toBe("DENY");
    // Browsers hold a form post's redirect to form-action: the answer may go to the client's URIs.
    const csp = swedish.headers.get("Content-Security-Policy")!;
    expect(csp).toContain("form-action 'self' https://test.example;");
  });

  it("styles the pages with the client's css, taking only safe values", async () => {
    const client = await webClient({
      css: {
        color: "#222",
        button: { "background-color": "#0a7", color: "url(https://evil.example/x)" },
        h1: { "font-family": '"Fjord Sans' },
      },
    });
    const res = await new Browser().get(authorizePath(client.id));
    const page = await expectPage(res, 200, "Sign in");
    expect(page).toContain("<style>body{color:#222}button{background-color:#0a7}</style>");
    expect(page).not.toContain("evil.example");
    expect(page).not.toContain("Fjord Sans");
    // Both style sheets, and only they, are allowed by hash (beside the passkey script, expectPage).
    const styleSources = /style-src ([^;]*)/.exec(res.headers.get("Content-Security-Policy")!)![1]!;
    expect(styleSources.match(/'sha256-/g)).toHaveLength(2);
  });

  it("takes approve or deny only from a signed-in browser, and a form only as a form", async () => {
    const client = await webClient();
    const browser = new Browser();
    const login = await (await browser.get(authorizePath(client.id))).text();
    const approve = await browser.submit(login, { action: "approve" });
    expect(await expectPage(approve, 403, "Sign in")).toContain("The page had expired. Please try again.");
    const unknown = await browser.submit(login, { action: "other" });
    await expectPage(unknown, 400, "Sign in");
    const json = await call("/oauth/authorize", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ client_id: client.id }),
    });
    await expectPage(json, 400, "Sign-in cannot start");
  });

  it("refuses HEAD, so that prefetchers never pass through", async () => {
    const client = await webClient();
    expect((await call(authorizePath(client.id), { method: "HEAD" })).status).toBe(405);
  });
});

describe("GET /oauth/authorize: single sign-on", () => {
  it("passes a signed-in browser straight through to a second client with enableSso", async () => {
    const first = await webClient({ autoApprove: true });
    const second = await webClient({ autoApprove: true, enableSso: true });
    const noSso = await webClient({ autoApprove: true });
    const user = await createUser(nextUser++);
    const browser = new Browser();
    redirectParameters(await logIn(browser, first.id, user));

    const through = await browser.get(authorizePath(second.id));
    const code = redirectParameters(through).params.get("code")!;
    const tokens = (await (await redeem(second, code)).json()) as { user_id: string };
    expect(tokens.user_id).toBe(user.row.userId);
    // A client without single sign-on asks for the password again.
    await expectPage(await browser.get(authorizePath(noSso.id)), 200, "Sign in");
    // A browser without the session gets the login page at the SSO client.
    await expectPage(await new Browser().get(authorizePath(second.id)), 200, "Sign in");
  });

  it("asks for consent on the way through when the user has not granted the SSO client access", async () => {
    const first = await webClient({ autoApprove: true });
    const second = await webClient({ enableSso: true });
    const user = await createUser(nextUser++, { clients: [] });
    const browser = new Browser();
    redirectParameters(await logIn(browser, first.id, user));
    const consent = await expectPage(await browser.get(authorizePath(second.id)), 200, "Allow access");
    expect(redirectParameters(await browser.submit(consent, { action: "approve" })).params.get("code")).toBeTruthy();
  });

  it("takes no approval posted to the login page of a client the browser has not signed in to", async () => {
    const first = await webClient({ autoApprove: true });
    // Another merchant's client, without single sign-on, that the user is not connected to.
    const other = await webClient({ merchantId: 20 });
    const user = await createUser(nextUser++, { clients: [] });
    const browser = new Browser();
    redirectParameters(await logIn(browser, first.id, user));
    const login = await expectPage(await browser.get(authorizePath(other.id)), 200, "Sign in");
    const approve = await browser.submit(login, { action: "approve" });
    expect(await expectPage(approve, 403, "Sign in")).toContain("The page had expired. Please try again.");
    // A login page carries no consent ticket, and another client's consent page's ticket is not this one's.
    expect(login).not.toContain('name="consent"');
    const ssoFirst = await webClient({ enableSso: true });
    const ssoConsent = await expectPage(await browser.get(authorizePath(ssoFirst.id)), 200, "Allow access");
    const ticket = /name="consent" value="([^"]+)"/.exec(ssoConsent)![1]!;
    const borrowed = await browser.submit(login, { action: "approve", consent: ticket });
    await expectPage(borrowed, 403, "Sign in");
  });

  it("carries single sign-on across merchants only with the user's consent, even at autoApprove clients", async () => {
    const home = await webClient({ autoApprove: true });
    const elsewhere = await webClient({ merchantId: 20, autoApprove: true, enableSso: true });
    const user = await createUser(nextUser++, { clients: [] });
    const browser = new Browser();
    redirectParameters(await logIn(browser, home.id, user));
    const consent = await expectPage(await browser.get(authorizePath(elsewhere.id)), 200, "Allow access");
    const { params } = redirectParameters(await browser.submit(consent, { action: "approve" }));
    expect(params.get("code")).toBeTruthy();
    // Approved once, the next pass-through is silent.
    expect(redirectParameters(await browser.get(authorizePath(elsewhere.id))).params.get("code")).toBeTruthy();
    // Within the session's own merchant, an autoApprove client passes through without asking.
    const sibling = await webClient({ autoApprove: true, enableSso: true });
    expect(redirectParameters(await browser.get(authorizePath(sibling.id))).params.get("code")).toBeTruthy();
  });

  it("counts a session whose client is gone as no merchant's: consent before an autoApprove client", async () => {
    const gone = await webClient({ autoApprove: true });
    const sso = await webClient({ autoApprove: true, enableSso: true });
    const user = await createUser(nextUser++, { clients: [] });
    const browser = new Browser();
    redirectParameters(await logIn(browser, gone.id, user));
    await openDatabase(env.DB).delete(clients).where(eq(clients.id, gone.id));
    await expectPage(await browser.get(authorizePath(sso.id)), 200, "Allow access");
  });

  it("stops passing through once the session ends (sign-out) or the user is blocked", async () => {
    const sso = await webClient({ autoApprove: true, enableSso: true });
    const user = await createUser(nextUser++);
    const browser = new Browser();
    redirectParameters(await logIn(browser, sso.id, user));
    redirectParameters(await browser.get(authorizePath(sso.id)));
    await browser.submit(await (await browser.get("/oauth/logout")).text(), {});
    await expectPage(await browser.get(authorizePath(sso.id)), 200, "Sign in");

    redirectParameters(await logIn(browser, sso.id, user));
    await createUser(Number(user.row.userId), { ...user.row, status: -2 });
    await expectPage(await browser.get(authorizePath(sso.id)), 200, "Sign in");
  });
});

describe("GET /oauth/authorize: PKCE and public clients", () => {
  it("binds the code to the S256 challenge: the right verifier redeems it, a wrong or missing one does not", async () => {
    const client = await webClient({ autoApprove: true });
    const user = await createUser(nextUser++);
    const challenge = await s256Challenge(VERIFIER);
    const pkce = { code_challenge: challenge, code_challenge_method: "S256" };
    for (const verifier of [undefined, `${VERIFIER}x`]) {
      const code = redirectParameters(await logIn(new Browser(), client.id, user, pkce)).params.get("code")!;
      const res = await redeem(client, code, verifier === undefined ? {} : { code_verifier: verifier });
      await expectOAuthError(res, "invalid_grant", "code_verifier");
      // Not spent by the failed try: the right verifier still redeems it.
      expect((await redeem(client, code, { code_verifier: VERIFIER })).status).toBe(200);
    }
    // A code without a challenge is refused with a verifier (no downgrade).
    const plain = redirectParameters(await logIn(new Browser(), client.id, user)).params.get("code")!;
    await expectOAuthError(await redeem(client, plain, { code_verifier: VERIFIER }), "invalid_grant");
  });

  it("lets a public client redeem with client_id alone, and requires PKCE of it", async () => {
    const app = await webClient({ public: true, autoApprove: true });
    const user = await createUser(nextUser++);
    const browser = new Browser();
    const refused = await browser.get(authorizePath(app.id));
    const { params } = redirectParameters(refused);
    expect(params.get("error")).toBe("invalid_request");
    expect(params.get("error_description")).toContain("PKCE");

    const challenge = await s256Challenge(VERIFIER);
    const res = await logIn(browser, app.id, user, { code_challenge: challenge, code_challenge_method: "S256" });
    const code = redirectParameters(res).params.get("code")!;
    const tokens = await postForm("/oauth/token", {
      grant_type: "authorization_code",
      client_id: app.id,
      code,
      redirect_uri: CALLBACK,
      code_verifier: VERIFIER,
    });
    expect(tokens.status).toBe(200);
    const { refresh_token } = (await tokens.json()) as { refresh_token: string };
    const refreshed = await postForm("/oauth/token", { grant_type: "refresh_token", client_id: app.id, refresh_token });
    expect(refreshed.status).toBe(200);
    // Rotated as any client's: once its successor is used, the first token presented again is reuse.
    const next = ((await refreshed.json()) as { refresh_token: string }).refresh_token;
    const refresh = (token: string) =>
      postForm("/oauth/token", { grant_type: "refresh_token", client_id: app.id, refresh_token: token });
    const after = await refresh(next);
    expect(after.status).toBe(200);
    await after.body?.cancel();
    const replayed = await refresh(refresh_token);
    expect(replayed.status).toBe(400);
    expect(await replayed.json()).toMatchObject({ error: "invalid_grant" });
  });

  it("never lets a confidential client, or a public one for other grants, go without its secret", async () => {
    const confidential = await webClient({ grantTypes: ["authorization_code", "client_credentials"] });
    const publicApp = await webClient({ public: true, grantTypes: ["authorization_code", "client_credentials"] });
    for (const [client, grant] of [
      [confidential, "authorization_code"],
      [publicApp, "client_credentials"],
    ] as const) {
      const res = await postForm("/oauth/token", {
        grant_type: grant,
        client_id: client.id,
        code: "x",
        redirect_uri: CALLBACK,
      });
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: string }).error).toBe("invalid_client_id");
    }
  });

  it.each([
    ["plain", { code_challenge: "x".repeat(43), code_challenge_method: "plain" }],
    ["no method", { code_challenge: "x".repeat(43) }],
    ["a method without a challenge", { code_challenge_method: "S256" }],
    ["a malformed challenge", { code_challenge: "short", code_challenge_method: "S256" }],
  ])("refuses %s with invalid_request at the redirect URI", async (_, pkce) => {
    const client = await webClient();
    const { base, params } = redirectParameters(await call(authorizePath(client.id, pkce), { redirect: "manual" }));
    expect(base).toBe(CALLBACK);
    expect(params.get("error")).toBe("invalid_request");
    expect(params.get("state")).toBe("st-123");
  });
});

describe("GET /oauth/authorize: where failures go (the spec's three rules)", () => {
  async function failure(clientId: string, params: Record<string, string>) {
    return call(authorizePath(clientId, params), { redirect: "manual" });
  }

  it("1. uses the failure redirect URI when one is given and registered", async () => {
    const client = await webClient();
    const { base, params } = redirectParameters(
      await failure(client.id, { response_type: "token", failure_redirect_uri: FAILURE }),
    );
    expect(base).toBe(FAILURE);
    expect(params.get("error")).toBe("unsupported_response_type");
    expect(params.get("state")).toBe("st-123");
    // Also when the flow's redirect URI is the problem.
    const mismatch = redirectParameters(
      await failure(client.id, { redirect_uri: "https://evil.example/cb", failure_redirect_uri: FAILURE }),
    );
    expect(mismatch.base).toBe(FAILURE);
    expect(mismatch.params.get("error")).toBe("redirect_uri_mismatch");
  });

  it("2. otherwise uses the flow's redirect URI; an unregistered failure URI is itself a failure sent there", async () => {
    const client = await webClient();
    const { base, params } = redirectParameters(await failure(client.id, { response_type: "token" }));
    expect(base).toBe(CALLBACK);
    expect(params.get("error")).toBe("unsupported_response_type");
    const bad = redirectParameters(await failure(client.id, { failure_redirect_uri: "https://evil.example/f" }));
    expect(bad.base).toBe(CALLBACK);
    expect(bad.params.get("error")).toBe("redirect_uri_mismatch");
  });

  it("3. uses the client's default redirect URI when the given one is not registered, exactly", async () => {
    const client = await webClient();
    for (const uri of ["https://evil.example/cb", `${CALLBACK}/`, `${CALLBACK}?x=1`, CALLBACK.toUpperCase()]) {
      const { base, params } = redirectParameters(await failure(client.id, { redirect_uri: uri }));
      expect(base, uri).toBe(DEFAULT);
      expect(params.get("error")).toBe("redirect_uri_mismatch");
      expect(params.get("state")).toBe("st-123");
    }
  });

  it("shows an error page, redirecting nowhere, when no registered URI is left", async () => {
    const noDefault = await webClient({ defaultRedirectUri: null });
    for (const res of [
      await failure(noDefault.id, { redirect_uri: "https://evil.example/cb" }),
      await failure("no-such-client-id", {}),
      await call("/oauth/authorize?response_type=code", { redirect: "manual" }),
    ]) {
      const page = await expectPage(res, 400, "Sign-in cannot start");
      expect(res.headers.get("Location")).toBeNull();
      expect(page).not.toContain("evil.example");
    }
  });

  it("uses the default redirect URI when none is given, for the flow and its code", async () => {
    const client = await webClient({ autoApprove: true });
    const user = await createUser(nextUser++);
    const browser = new Browser();
    const page = await (await browser.get(`/oauth/authorize?client_id=${client.id}&response_type=code`)).text();
    const res = await browser.submit(page, { action: "login", email: user.email, password: user.password });
    expect(redirectParameters(res).base).toBe(DEFAULT);
  });

  it.each([
    ["a repeated parameter", "&state=again", "invalid_request"],
    ["a response type other than code", "&response_type=token", "invalid_request"],
    ["a scope", "&scope=admin", "invalid_scope"],
    ["a scope beside OpenID Connect's", "&scope=openid%20admin", "invalid_scope"],
    ["a state over 2,048 characters", "", "invalid_request"],
  ])("sends %s back as an error", async (name, extra, error) => {
    const client = await webClient();
    const path = name.startsWith("a state")
      ? authorizePath(client.id, { state: "s".repeat(2049) })
      : authorizePath(client.id);
    const { params } = redirectParameters(await call(`${path}${extra}`, { redirect: "manual" }));
    expect(params.get("error")).toBe(error);
    // A state too long to trust is not sent back.
    if (name.startsWith("a state")) expect(params.get("state")).toBeNull();
  });

  it("takes OpenID Connect's scopes as SPiD's browser SDK sends them, prompt=select_account too, and grants them", async () => {
    const client = await webClient({ autoApprove: true });
    const user = await createUser(nextUser++);
    const browser = new Browser();
    const path = authorizePath(client.id, { scope: "openid profile email", prompt: "select_account" });
    const page = await expectPage(await browser.get(path), 200, "Sign in");
    const res = await browser.submit(page, { action: "login", email: user.email, password: user.password });
    const tokens = await redeem(client, redirectParameters(res).params.get("code")!);
    expect(tokens.status).toBe(200);
    const body = (await tokens.json()) as Record<string, unknown>;
    expect(body.scope).toBe("openid profile email");
    expect(body.id_token).toEqual(expect.any(String));
  });

  it("refuses a missing response_type as invalid_request, an unknown one as unsupported_response_type", async () => {
    const client = await webClient();
    const path = `/oauth/authorize?client_id=${client.id}&redirect_uri=${encodeURIComponent(CALLBACK)}`;
    const missing = redirectParameters(await call(path, { redirect: "manual" }));
    expect(missing.params.get("error")).toBe("invalid_request");
    const unknown = redirectParameters(await call(`${path}&response_type=id_token`, { redirect: "manual" }));
    expect(unknown.params.get("error")).toBe("unsupported_response_type");
  });

  it("refuses a client without the authorization_code grant as unauthorized_client", async () => {
    const client = await webClient({ grantTypes: ["client_credentials"] });
    const { params } = redirectParameters(await call(authorizePath(client.id), { redirect: "manual" }));
    expect(params.get("error")).toBe("unauthorized_client");
  });

  it("keeps the registered redirect URI's own query as it is, and adds to it", async () => {
    const withQuery = "https://test.example/cb?shop=a%20b";
    const client = await webClient({ redirectUris: [withQuery], defaultRedirectUri: null, autoApprove: true });
    const user = await createUser(nextUser++);
    const browser = new Browser();
    const page = await (await browser.get(authorizePath(client.id, { redirect_uri: withQuery }))).text();
    const res = await browser.submit(page, { action: "login", email: user.email, password: user.password });
    expect(res.headers.get("Location")).toMatch(/^https:\/\/test\.example\/cb\?shop=a%20b&code=/);
  });
});
