/**
 * OpenID Connect: discovery, ID tokens, userinfo and the authorization request's OpenID
 * parameters, through the Worker's HTTP surface. Each case names the OpenID Foundation
 * conformance-suite module (openid-certification/conformance-suite) whose checks it makes.
 */
import {
  base64url,
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  generateKeyPair,
  type JSONWebKeySet,
  jwtVerify,
  SignJWT,
  UnsecuredJWT,
} from "jose";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Browser, expectPage, redirectParameters } from "./helpers/browser";
import { BASE, basicAuth, bearer, call, expectOAuthError, postForm } from "./helpers/http";
import { consumeLinkRequests } from "./helpers/queues";
import { mailbox } from "./helpers/mailbox";
import { createClient, createUser } from "./helpers/seed";

const CALLBACK = "https://rp.example/callback";
const OTHER_CALLBACK = "https://rp.example/other";

let nextUser = 9_800 + Math.floor(Math.random() * 40) * 10;

type Tokens = { access_token: string; id_token?: string; refresh_token: string; scope: string };

async function rpClient(overrides: Record<string, unknown> = {}) {
  return createClient({
    name: "Relying Party",
    redirectUris: [CALLBACK, OTHER_CALLBACK],
    grantTypes: ["authorization_code", "refresh_token", "password", "client_credentials"],
    enableSso: true,
    ...overrides,
  });
}

async function rpUser(overrides: Record<string, unknown> = {}) {
  return createUser(nextUser++, {
    clients: [],
    name: { givenName: "Kari", familyName: "Nordmann" },
    phoneNumber: "+4791234567",
    phoneNumberVerified: "2024-02-01 10:00:00",
    emailVerified: "2024-02-01 10:00:00",
    gender: "female",
    birthday: "1984-04-01",
    locale: "nb_NO",
    addresses: { home: { streetAddress: "Storgata 1", postalCode: "0155", locality: "Oslo", country: "NO" } },
    ...overrides,
  });
}

function authorizePath(clientId: string, extra: Record<string, string> = {}) {
  const params = new URLSearchParams({
    client_id: clientId,
    redirect_uri: CALLBACK,
    response_type: "code",
    scope: "openid",
    state: "st-oidc",
    nonce: "n-0S6_WzA2Mj",
    ...extra,
  });
  return `/oauth/authorize?${params}`;
}

/** Signs in on the login page; the client auto-approves, so this ends in the code's redirect. */
async function logIn(browser: Browser, clientId: string, user: { email: string; password: string }, extra = {}) {
  const page = await expectPage(await browser.get(authorizePath(clientId, extra)), 200, "Sign in");
  return browser.submit(page, { action: "login", email: user.email, password: user.password, remember: "1" });
}

async function redeem(client: { id: string; secret: string }, code: string): Promise<Tokens> {
  const res = await postForm(
    "/oauth/token",
    { grant_type: "authorization_code", code, redirect_uri: CALLBACK },
    basicAuth(client.id, client.secret),
  );
  expect(res.status).toBe(200);
  return (await res.json()) as Tokens;
}

/** A full login at the client: the tokens its code redeems for. */
async function codeFlow(
  client: { id: string; secret: string },
  user: { email: string; password: string },
  extra: Record<string, string> = {},
  browser = new Browser(),
): Promise<Tokens> {
  const res = await logIn(browser, client.id, user, extra);
  return redeem(client, redirectParameters(res).params.get("code")!);
}

async function keySet(): Promise<JSONWebKeySet> {
  return (await (await call("/.well-known/jwks.json")).json()) as JSONWebKeySet;
}

/** The ID token verified against the published keys, as a relying party verifies it. */
async function verifiedIdToken(idToken: string, clientId: string) {
  const { payload, protectedHeader } = await jwtVerify(idToken, createLocalJWKSet(await keySet()), {
    issuer: BASE,
    audience: clientId,
  });
  return { claims: payload as Record<string, unknown>, header: protectedHeader };
}

async function atHash(token: string, hash: "SHA-256" | "SHA-512" = "SHA-256") {
  const digest = await crypto.subtle.digest(hash, new TextEncoder().encode(token));
  return base64url.encode(new Uint8Array(digest, 0, digest.byteLength / 2));
}

async function userinfo(init: RequestInit & { path?: string } = {}) {
  return call(init.path ?? "/oauth/userinfo", init);
}

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe("discovery (oidcc-discovery-endpoint-verification)", () => {
  it("serves one document at both well-known paths, with what the Config OP plan requires", async () => {
    const openid = await call("/.well-known/openid-configuration");
    expect(openid.status).toBe(200);
    expect(openid.headers.get("Content-Type")).toContain("application/json");
    const document = (await openid.json()) as Record<string, unknown>;
    const oauth = (await (await call("/.well-known/oauth-authorization-server")).json()) as Record<string, unknown>;
    expect(oauth).toEqual(document);
    expect(document).toMatchObject({
      issuer: BASE,
      authorization_endpoint: `${BASE}/oauth/authorize`,
      token_endpoint: `${BASE}/oauth/token`,
      userinfo_endpoint: `${BASE}/oauth/userinfo`,
      jwks_uri: `${BASE}/.well-known/jwks.json`,
      scopes_supported: ["openid", "profile", "email", "phone", "address", "offline_access"],
      subject_types_supported: ["public"],
      response_types_supported: ["code"],
      claims_parameter_supported: true,
      request_parameter_supported: false,
      request_uri_parameter_supported: false,
      ui_locales_supported: ["en-US", "nb-NO", "sv-SE"],
    });
    expect(document.id_token_signing_alg_values_supported).toContain("RS256");
    expect(document.token_endpoint_auth_methods_supported).toContain("client_secret_post");
    expect(document.claims_supported).toEqual(
      expect.arrayContaining(["sub", "legacy_user_id", "email", "email_verified", "address", "auth_time", "sid"]),
    );
    for (const [key, value] of Object.entries(document)) {
      if (key.endsWith("_endpoint")) expect(String(value), key).toMatch(/^https:\/\//);
    }
  });

  it("publishes every key with a distinct kid, RS256 among them, and nothing private", async () => {
    const { keys } = await keySet();
    expect(keys.map((key) => key.alg).sort()).toEqual(["EdDSA", "RS256"]);
    expect(new Set(keys.map((key) => key.kid)).size).toBe(keys.length);
    for (const key of keys) {
      expect(key.kid).toBeTruthy();
      expect(key.use).toBe("sig");
      for (const member of ["d", "p", "q", "dp", "dq", "qi", "k"]) expect(key).not.toHaveProperty(member);
    }
  });
});

describe("the code flow's ID token (oidcc-server)", () => {
  it("is RS256 with a kid, for the client, with nonce, at_hash, auth_time, sid, acr and amr", async () => {
    const client = await rpClient({ autoApprove: true });
    const user = await rpUser();
    const before = Math.floor(Date.now() / 1000);
    const tokens = await codeFlow(client, user);
    expect(tokens.scope).toBe("openid");
    const { claims, header } = await verifiedIdToken(tokens.id_token!, client.id);
    expect(header).toMatchObject({ alg: "RS256", typ: "JWT" });
    expect((await keySet()).keys.find((key) => key.kid === header.kid)?.alg).toBe("RS256");
    expect(claims).toMatchObject({
      iss: BASE,
      sub: user.row.uuid,
      aud: client.id,
      azp: client.id,
      nonce: "n-0S6_WzA2Mj",
      acr: "password",
      amr: ["pwd"],
      at_hash: await atHash(tokens.access_token),
    });
    expect(claims.auth_time).toBeGreaterThanOrEqual(before);
    expect(claims.exp).toBe((claims.iat as number) + 3600);
    expect(claims.sid).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // Scope openid alone releases no profile claim into the ID token.
    expect(claims).not.toHaveProperty("name");
    expect(claims).not.toHaveProperty("email");
  });

  it("leaves nonce out when the request had none (oidcc-ensure-request-without-nonce-succeeds-for-code-flow)", async () => {
    const client = await rpClient({ autoApprove: true });
    const user = await rpUser();
    const res = await logIn(new Browser(), client.id, user, { nonce: "" });
    const tokens = await redeem(client, redirectParameters(res).params.get("code")!);
    expect(decodeJwt(tokens.id_token!)).not.toHaveProperty("nonce");
  });

  it("says a sign-in by a mailed link: acr otp-email, amr email", async () => {
    const client = await rpClient({ autoApprove: true });
    const user = await rpUser();
    const mail = mailbox();
    const authorization = Object.fromEntries(new URL(authorizePath(client.id), BASE).searchParams);
    await consumeLinkRequests([
      { clientId: client.id, email: user.email, redirectUri: CALLBACK, remember: true, locale: "en_US", authorization },
    ]);
    const browser = new Browser();
    const page = await expectPage(await browser.get(await mail.link(user.email)), 200, "Confirm sign-in");
    const { params } = redirectParameters(await browser.submit(page, {}));
    const { claims } = await verifiedIdToken((await redeem(client, params.get("code")!)).id_token!, client.id);
    expect(claims).toMatchObject({ sub: user.row.uuid, acr: "otp-email", amr: ["email"], nonce: "n-0S6_WzA2Mj" });
    expect(claims.sid).toEqual(expect.any(String));
  });

  it("gives the same session's ID tokens one sid, and another browser's another", async () => {
    const client = await rpClient({ autoApprove: true });
    const user = await rpUser();
    const browser = new Browser();
    const first = decodeJwt((await codeFlow(client, user, {}, browser)).id_token!);
    const res = await browser.get(authorizePath(client.id));
    const again = decodeJwt((await redeem(client, redirectParameters(res).params.get("code")!)).id_token!);
    expect(again.sid).toBe(first.sid);
    const elsewhere = decodeJwt((await codeFlow(client, user)).id_token!);
    expect(elsewhere.sid).not.toBe(first.sid);
  });

  it("issues no ID token, and grants the scope asked for, without openid", async () => {
    const client = await rpClient({ autoApprove: true });
    const user = await rpUser();
    const tokens = await codeFlow(client, user, { scope: "profile" });
    expect(tokens.scope).toBe("profile");
    expect(tokens).not.toHaveProperty("id_token");
  });

  it("signs with EdDSA for a client that registered it, at_hash by SHA-512", async () => {
    const client = await rpClient({
      autoApprove: true,
      idTokenSignedResponseAlg: "EdDSA",
      accessTokenSignedResponseAlg: "RS256",
    });
    const user = await rpUser();
    const tokens = await codeFlow(client, user);
    const { claims, header } = await verifiedIdToken(tokens.id_token!, client.id);
    expect(header.alg).toBe("EdDSA");
    expect(claims.at_hash).toBe(await atHash(tokens.access_token, "SHA-512"));
    // Its access token is RS256, and this API takes it.
    expect(decodeProtectedHeader(tokens.access_token).alg).toBe("RS256");
    expect((await userinfo({ headers: bearer(tokens.access_token) })).status).toBe(200);
  });
});

describe("userinfo (oidcc-userinfo-get, -post-header, -post-body)", () => {
  it("answers the token's claims as JSON by GET, POST with the header, and POST with the token in the body", async () => {
    const client = await rpClient({ autoApprove: true });
    const user = await rpUser();
    const tokens = await codeFlow(client, user);
    const { sub } = decodeJwt(tokens.id_token!);
    const responses = [
      await userinfo({ headers: bearer(tokens.access_token) }),
      await userinfo({ method: "POST", headers: bearer(tokens.access_token) }),
      await postForm("/oauth/userinfo", { access_token: tokens.access_token }),
    ];
    for (const res of responses) {
      expect(res.status).toBe(200);
      expect(res.headers.get("Content-Type")).toContain("application/json");
      expect(await res.json()).toEqual({ sub, legacy_user_id: user.row.userId });
    }
    expect(sub).toBe(user.row.uuid);
  });

  it("refuses a token without openid with 403 insufficient_scope, and no token with 401", async () => {
    const client = await rpClient({ autoApprove: true });
    const user = await rpUser();
    const tokens = await codeFlow(client, user, { scope: "profile" });
    const res = await userinfo({ headers: bearer(tokens.access_token) });
    expect(res.status).toBe(403);
    expect(res.headers.get("WWW-Authenticate")).toBe('Bearer error="insufficient_scope", scope="openid"');
    expect(await res.json()).toMatchObject({ error: "insufficient_scope" });
    expect((await userinfo()).status).toBe(401);
    const server = await postForm(
      "/oauth/token",
      { grant_type: "client_credentials", scope: "openid" },
      basicAuth(client.id, client.secret),
    );
    const serverToken = ((await server.json()) as Tokens).access_token;
    expect((await userinfo({ headers: bearer(serverToken) })).status).toBe(403);
  });

  it.each([
    [
      "oidcc-scope-profile",
      "openid profile",
      {
        name: "Kari Nordmann",
        given_name: "Kari",
        family_name: "Nordmann",
        gender: "female",
        birthdate: "1984-04-01",
        locale: "nb-NO",
      },
    ],
    ["oidcc-scope-email", "openid email", { email_verified: true }],
    ["oidcc-scope-phone", "openid phone", { phone_number: "+4791234567", phone_number_verified: true }],
    [
      "oidcc-scope-address",
      "openid address",
      {
        address: { street_address: "Storgata 1", postal_code: "0155", locality: "Oslo", country: "NO" },
      },
    ],
  ])("releases each scope's claims (%s)", async (_, scope, expected) => {
    const client = await rpClient({ autoApprove: true });
    const user = await rpUser();
    const tokens = await codeFlow(client, user, { scope });
    const claims = (await (await userinfo({ headers: bearer(tokens.access_token) })).json()) as Record<string, unknown>;
    expect(claims).toMatchObject({ sub: user.row.uuid, legacy_user_id: user.row.userId, ...expected });
    if (scope.includes("email")) expect(claims.email).toBe(user.email);
    else expect(claims).not.toHaveProperty("email");
    if (!scope.includes("profile")) expect(claims).not.toHaveProperty("name");
    if (scope.includes("profile")) expect(claims.updated_at).toEqual(expect.any(Number));
  });

  it("releases every scope's claims together, in any order (oidcc-scope-all, oidcc-alternate-happy-flow)", async () => {
    const client = await rpClient({ autoApprove: true });
    const user = await rpUser();
    const tokens = await codeFlow(client, user, { scope: "address phone email profile openid" });
    expect(tokens.scope).toBe("openid profile email phone address");
    const claims = (await (await userinfo({ headers: bearer(tokens.access_token) })).json()) as Record<string, unknown>;
    for (const name of ["name", "email", "phone_number", "address"]) expect(claims).toHaveProperty(name);
  });

  it("leaves out the claims a user has no value for, never null", async () => {
    const client = await rpClient({ autoApprove: true });
    const user = await createUser(nextUser++, { clients: [] });
    const tokens = await codeFlow(client, user, { scope: "openid profile phone address" });
    const claims = (await (await userinfo({ headers: bearer(tokens.access_token) })).json()) as Record<string, unknown>;
    expect(Object.values(claims)).not.toContain(null);
    for (const name of ["gender", "birthdate", "phone_number", "address", "given_name"]) {
      expect(claims).not.toHaveProperty(name);
    }
  });

  it("gives a claim asked for by name in the claims parameter (oidcc-claims-essential)", async () => {
    const client = await rpClient({ autoApprove: true });
    const user = await rpUser();
    const claimsRequest = JSON.stringify({
      userinfo: { name: { essential: true } },
      id_token: { email: null },
    });
    const tokens = await codeFlow(client, user, { claims: claimsRequest });
    const claims = (await (await userinfo({ headers: bearer(tokens.access_token) })).json()) as Record<string, unknown>;
    expect(claims.name).toBe("Kari Nordmann");
    expect(claims).not.toHaveProperty("email");
    const idToken = decodeJwt(tokens.id_token!);
    expect(idToken.email).toBe(user.email);
    expect(idToken).not.toHaveProperty("name");
    // A refreshed access token keeps what the request asked for.
    const refreshed = await postForm(
      "/oauth/token",
      { grant_type: "refresh_token", refresh_token: tokens.refresh_token },
      basicAuth(client.id, client.secret),
    );
    const again = ((await refreshed.json()) as Tokens).access_token;
    expect(((await (await userinfo({ headers: bearer(again) })).json()) as Record<string, unknown>).name).toBe(
      "Kari Nordmann",
    );
  });
});

describe("prompt, max_age and id_token_hint", () => {
  it("answers prompt=none without a session with login_required and the state (oidcc-prompt-none-not-logged-in)", async () => {
    const client = await rpClient({ autoApprove: true });
    const state = `${"a".repeat(124)}-._~`;
    const res = await new Browser().get(authorizePath(client.id, { prompt: "none", state }));
    const { base, params } = redirectParameters(res);
    expect(base).toBe(CALLBACK);
    expect(params.get("error")).toBe("login_required");
    expect(params.get("state")).toBe(state);
    expect(params.get("iss")).toBe(BASE);
    expect(params.has("code")).toBe(false);
  });

  it("passes prompt=none through a live session, same subject and auth_time (oidcc-prompt-none-logged-in)", async () => {
    const client = await rpClient({ autoApprove: true });
    const user = await rpUser();
    const browser = new Browser();
    const first = decodeJwt((await codeFlow(client, user, {}, browser)).id_token!);
    const res = await browser.get(authorizePath(client.id, { prompt: "none" }));
    const second = decodeJwt((await redeem(client, redirectParameters(res).params.get("code")!)).id_token!);
    expect(second.sub).toBe(first.sub);
    expect(second.auth_time).toBe(first.auth_time);
  });

  it("answers prompt=none with consent_required where the user has not granted the client", async () => {
    const sso = await rpClient({ autoApprove: true });
    const asking = await rpClient();
    const user = await rpUser();
    const browser = new Browser();
    await codeFlow(sso, user, {}, browser);
    const { params } = redirectParameters(await browser.get(authorizePath(asking.id, { prompt: "none" })));
    expect(params.get("error")).toBe("consent_required");
  });

  it("answers prompt=none at a client without single sign-on with login_required", async () => {
    const client = await rpClient({ autoApprove: true, enableSso: false });
    const user = await rpUser();
    const browser = new Browser();
    await codeFlow(client, user, {}, browser);
    const { params } = redirectParameters(await browser.get(authorizePath(client.id, { prompt: "none" })));
    expect(params.get("error")).toBe("login_required");
  });

  it("asks a signed-in user to sign in again for prompt=login, with a later auth_time (oidcc-prompt-login)", async () => {
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() });
    const client = await rpClient({ autoApprove: true });
    const user = await rpUser();
    const browser = new Browser();
    const first = decodeJwt((await codeFlow(client, user, {}, browser)).id_token!);
    vi.setSystemTime(Date.now() + 2000);
    const second = decodeJwt((await codeFlow(client, user, { prompt: "login" }, browser)).id_token!);
    expect(second.auth_time as number).toBeGreaterThan(first.auth_time as number);
  });

  it("asks again once max_age has passed, and not before (oidcc-max-age-1, oidcc-max-age-10000)", async () => {
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() });
    const client = await rpClient({ autoApprove: true });
    const user = await rpUser();
    const browser = new Browser();
    const first = decodeJwt((await codeFlow(client, user, { max_age: "15000" }, browser)).id_token!);
    expect(first.auth_time).toEqual(expect.any(Number));
    vi.setSystemTime(Date.now() + 2000);
    const kept = await browser.get(authorizePath(client.id, { max_age: "10000" }));
    const same = decodeJwt((await redeem(client, redirectParameters(kept).params.get("code")!)).id_token!);
    expect(same.auth_time).toBe(first.auth_time);
    await expectPage(await browser.get(authorizePath(client.id, { max_age: "1" })), 200, "Sign in");
    const { params } = redirectParameters(
      await browser.get(authorizePath(client.id, { max_age: "1", prompt: "none" })),
    );
    expect(params.get("error")).toBe("login_required");
  });

  it("passes an id_token_hint of the session's user through, and not another's (oidcc-id-token-hint)", async () => {
    const client = await rpClient({ autoApprove: true });
    const user = await rpUser();
    const other = await rpUser();
    const browser = new Browser();
    const hint = (await codeFlow(client, user, {}, browser)).id_token!;
    const res = await browser.get(authorizePath(client.id, { prompt: "none", id_token_hint: hint }));
    const again = decodeJwt((await redeem(client, redirectParameters(res).params.get("code")!)).id_token!);
    expect(again.sub).toBe(user.row.uuid);
    const otherHint = (await codeFlow(client, other)).id_token!;
    const refused = redirectParameters(
      await browser.get(authorizePath(client.id, { prompt: "none", id_token_hint: otherHint })),
    );
    expect(refused.params.get("error")).toBe("login_required");
    // Without prompt=none, the other user signs in.
    await expectPage(await browser.get(authorizePath(client.id, { id_token_hint: otherHint })), 200, "Sign in");
  });

  it("refuses a hint that is not our ID token for the client: unsigned, signed by another key, another client's", async () => {
    const client = await rpClient({ autoApprove: true });
    const otherClient = await rpClient({ autoApprove: true });
    const user = await rpUser();
    const browser = new Browser();
    const real = (await codeFlow(client, user, {}, browser)).id_token!;
    const claims = decodeJwt(real);
    const { privateKey } = await generateKeyPair("RS256");
    const hints = [
      new UnsecuredJWT(claims).encode(),
      await new SignJWT(claims)
        .setProtectedHeader({ alg: "RS256", kid: decodeProtectedHeader(real).kid! })
        .sign(privateKey),
      (await codeFlow(otherClient, user)).id_token!,
      "not-a-jwt",
    ];
    for (const hint of hints) {
      const { params } = redirectParameters(await browser.get(authorizePath(client.id, { id_token_hint: hint })));
      expect(params.get("error")).toBe("invalid_request");
      expect(params.get("state")).toBe("st-oidc");
    }
  });

  it("takes an expired hint: a client sends the last ID token it got", async () => {
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() });
    const client = await rpClient({ autoApprove: true });
    const user = await rpUser();
    const browser = new Browser();
    const hint = (await codeFlow(client, user, { max_age: "999999" }, browser)).id_token!;
    vi.setSystemTime(Date.now() + 2 * 3600 * 1000);
    const res = await browser.get(authorizePath(client.id, { prompt: "none", id_token_hint: hint }));
    expect(redirectParameters(res).params.get("code")).toBeTruthy();
  });

  it("shows who is signed in for prompt=select_account, to continue or switch", async () => {
    const client = await rpClient({ autoApprove: true });
    const user = await rpUser();
    const browser = new Browser();
    await codeFlow(client, user, {}, browser);
    const page = await expectPage(
      await browser.get(authorizePath(client.id, { prompt: "select_account" })),
      200,
      "Choose an account",
    );
    expect(page).toContain(`Continue as ${user.email}`);
    const continued = await browser.submit(page, { action: "continue" });
    expect(redirectParameters(continued).params.get("code")).toBeTruthy();
    await expectPage(await browser.submit(page, { action: "switch" }), 200, "Sign in");
  });

  it("shows the consent page again for prompt=consent", async () => {
    const client = await rpClient();
    const user = await rpUser();
    const browser = new Browser();
    const consent = await (await logIn(browser, client.id, user)).text();
    redirectParameters(await browser.submit(consent, { action: "approve" }));
    await expectPage(await browser.get(authorizePath(client.id, { prompt: "consent" })), 200, "Allow access");
    expect(redirectParameters(await browser.get(authorizePath(client.id))).params.get("code")).toBeTruthy();
  });

  it("opens the sign-up view for prompt=create", async () => {
    const client = await rpClient();
    const page = await expectPage(
      await new Browser().get(authorizePath(client.id, { prompt: "create" })),
      200,
      "Create an account",
    );
    expect(page).not.toContain('name="password"');
  });

  it("takes language tags that name no locale, inherited names among them, as the default language", async () => {
    const client = await rpClient();
    for (const tag of ["constructor", "__proto__", "toString"]) {
      await expectPage(await new Browser().get(authorizePath(client.id, { ui_locales: tag })), 200, "Sign in");
      await expectPage(await new Browser().get(authorizePath(client.id), { "Accept-Language": tag }), 200, "Sign in");
      await expectPage(await new Browser().get(`/oauth/logout?ui_locales=${tag}`), 200, "You are signed out");
    }
  });

  it("shows the page in the first of ui_locales we have, and fills in login_hint (oidcc-ui-locales, oidcc-login-hint)", async () => {
    const client = await rpClient();
    const page = await expectPage(
      await new Browser().get(authorizePath(client.id, { ui_locales: "se nb-NO en", login_hint: "kari@example.org" })),
      200,
      "Logg inn",
    );
    expect(page).toContain('value="kari@example.org"');
  });

  it.each([
    ["display=page", { display: "page" }],
    ["display=popup", { display: "popup" }],
    ["acr_values", { acr_values: "password otp-email" }],
    ["claims_locales", { claims_locales: "se" }],
    ["an unknown parameter", { extra: "foobar" }],
  ])("takes %s and signs in (oidcc-display-*, oidcc-ensure-request-with-*-succeeds)", async (_, extra) => {
    const client = await rpClient({ autoApprove: true });
    const user = await rpUser();
    const tokens = await codeFlow(client, user, extra);
    expect(tokens.id_token).toBeTruthy();
  });

  it.each([
    ["prompt=none with another value", { prompt: "none login" }, "invalid_request"],
    ["an unknown prompt", { prompt: "sometimes" }, "invalid_request"],
    ["a max_age that is no number", { max_age: "soon" }, "invalid_request"],
    ["an unknown display", { display: "hologram" }, "invalid_request"],
    ["a claims parameter that is no JSON object", { claims: "[1]" }, "invalid_request"],
    ["a claims member that is no object", { claims: '{"userinfo":true}' }, "invalid_request"],
    ["a request object", { request: "eyJhbGciOiJub25lIn0.e30." }, "request_not_supported"],
    ["a request object by reference", { request_uri: "https://rp.example/request.jwt" }, "request_uri_not_supported"],
    ["an unknown scope", { scope: "openid admin" }, "invalid_scope"],
  ])("refuses %s by redirect, with state", async (_, extra, error) => {
    const client = await rpClient({ autoApprove: true });
    const { params } = redirectParameters(await new Browser().get(authorizePath(client.id, extra)));
    expect(params.get("error")).toBe(error);
    expect(params.get("state")).toBe("st-oidc");
  });
});

describe("where an OpenID request's failures go", () => {
  it("shows an unregistered redirect_uri as a page, never a redirect (oidcc-ensure-registered-redirect-uri)", async () => {
    const client = await rpClient({ autoApprove: true, defaultRedirectUri: CALLBACK });
    for (const redirect_uri of [`${CALLBACK}/x1y2z3`, ""]) {
      const path = authorizePath(client.id, { redirect_uri });
      const res = await new Browser().get(redirect_uri ? path : path.replace("redirect_uri=&", ""));
      expect(res.headers.get("Location")).toBeNull();
      await expectPage(res, 400, "Sign-in cannot start");
    }
    // A plain OAuth request still falls back to the client's default (the spec's rule 3).
    const plain = authorizePath(client.id, { redirect_uri: `${CALLBACK}/x1y2z3`, scope: "" });
    expect(redirectParameters(await call(plain, { redirect: "manual" })).params.get("error")).toBe(
      "redirect_uri_mismatch",
    );
  });

  it("shows a request object with an unregistered redirect_uri as a page (oidcc-ensure-request-object-with-redirect-uri)", async () => {
    const client = await rpClient({ autoApprove: true });
    const request = new UnsecuredJWT({ redirect_uri: CALLBACK }).encode();
    const res = await new Browser().get(authorizePath(client.id, { redirect_uri: `${CALLBACK}_invalid`, request }));
    await expectPage(res, 400, "Sign-in cannot start");
  });

  it("takes the authorization request by POST (oidcc-ensure-post-request-succeeds)", async () => {
    const client = await rpClient({ autoApprove: true });
    const user = await rpUser();
    const browser = new Browser();
    const query = new URL(authorizePath(client.id), BASE).searchParams;
    const page = await expectPage(await browser.post("/oauth/authorize", Object.fromEntries(query)), 200, "Sign in");
    const res = await browser.submit(page, { action: "login", email: user.email, password: user.password });
    expect((await redeem(client, redirectParameters(res).params.get("code")!)).id_token).toBeTruthy();
  });
});

describe("the token endpoint", () => {
  it("answers a refresh with a new ID token: same iss, sub, aud, azp, auth_time and sid, a new iat, no nonce (oidcc-refresh-token)", async () => {
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() });
    const client = await rpClient({ autoApprove: true });
    const user = await rpUser();
    const browser = new Browser();
    const consent = await (
      await logIn(browser, client.id, user, { scope: "openid offline_access", prompt: "consent" })
    ).text();
    const approved = await browser.submit(consent, { action: "approve" });
    const tokens = await redeem(client, redirectParameters(approved).params.get("code")!);
    vi.setSystemTime(Date.now() + 5000);
    const res = await postForm(
      "/oauth/token",
      { grant_type: "refresh_token", refresh_token: tokens.refresh_token, scope: "openid offline_access" },
      basicAuth(client.id, client.secret),
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    const refreshed = (await res.json()) as Tokens;
    expect(refreshed.scope).toBe("openid offline_access");
    const before = decodeJwt(tokens.id_token!);
    const { claims: after } = await verifiedIdToken(refreshed.id_token!, client.id);
    for (const claim of ["iss", "sub", "aud", "azp", "auth_time", "sid", "acr"])
      expect(after[claim], claim).toEqual(before[claim]);
    expect(after.iat).toBeGreaterThan(before.iat!);
    expect(after).not.toHaveProperty("nonce");
    expect(after.at_hash).toBe(await atHash(refreshed.access_token));
    expect((await userinfo({ headers: bearer(refreshed.access_token) })).status).toBe(200);
  });

  it("narrows a refresh's scope, never widens it, and refuses another client's refresh token", async () => {
    const client = await rpClient({ autoApprove: true });
    const other = await rpClient({ autoApprove: true });
    const user = await rpUser();
    const tokens = await codeFlow(client, user, { scope: "openid email" });
    const wider = await postForm(
      "/oauth/token",
      { grant_type: "refresh_token", refresh_token: tokens.refresh_token, scope: "openid email phone" },
      basicAuth(client.id, client.secret),
    );
    await expectOAuthError(wider, "invalid_scope");
    const narrower = await postForm(
      "/oauth/token",
      { grant_type: "refresh_token", refresh_token: tokens.refresh_token, scope: "email" },
      basicAuth(client.id, client.secret),
    );
    const body = (await narrower.json()) as Tokens;
    expect(body.scope).toBe("email");
    expect(body).not.toHaveProperty("id_token");
    // The grant keeps its scope: the next refresh may ask for openid again.
    const full = await postForm(
      "/oauth/token",
      { grant_type: "refresh_token", refresh_token: body.refresh_token },
      basicAuth(client.id, client.secret),
    );
    const fullBody = (await full.json()) as Tokens;
    expect(fullBody.scope).toBe("openid email");
    const stolen = await postForm(
      "/oauth/token",
      { grant_type: "refresh_token", refresh_token: fullBody.refresh_token },
      basicAuth(other.id, other.secret),
    );
    await expectOAuthError(stolen, "invalid_grant");
  });

  it("refuses a reused code and revokes the first redemption's tokens (oidcc-codereuse, oidcc-codereuse-30seconds)", async () => {
    const client = await rpClient({ autoApprove: true });
    const user = await rpUser();
    const res = await logIn(new Browser(), client.id, user);
    const code = redirectParameters(res).params.get("code")!;
    const first = await redeem(client, code);
    expect((await userinfo({ headers: bearer(first.access_token) })).status).toBe(200);
    const second = await postForm(
      "/oauth/token",
      { grant_type: "authorization_code", code, redirect_uri: CALLBACK },
      basicAuth(client.id, client.secret),
    );
    expect(second.headers.get("Content-Type")).toContain("application/json");
    await expectOAuthError(second, "invalid_grant");
    expect((await userinfo({ headers: bearer(first.access_token) })).status).toBe(401);
  });

  it("refuses the password grant a resource that is not this API, with invalid_target", async () => {
    const client = await rpClient({ autoApprove: true });
    const user = await rpUser();
    const res = await postForm(
      "/oauth/token",
      {
        grant_type: "password",
        username: user.email,
        password: user.password,
        redirect_uri: CALLBACK,
        resource: "https://elsewhere.example/",
      },
      basicAuth(client.id, client.secret),
    );
    await expectOAuthError(res, "invalid_target");
  });

  it("gives the password grant an ID token for scope=openid: amr pwd, no sid", async () => {
    const client = await rpClient({ autoApprove: true });
    const user = await rpUser();
    const res = await postForm(
      "/oauth/token",
      {
        grant_type: "password",
        username: user.email,
        password: user.password,
        redirect_uri: CALLBACK,
        scope: "openid email",
      },
      basicAuth(client.id, client.secret),
    );
    const tokens = (await res.json()) as Tokens;
    expect(tokens.scope).toBe("openid email");
    const { claims } = await verifiedIdToken(tokens.id_token!, client.id);
    expect(claims).toMatchObject({ sub: user.row.uuid, amr: ["pwd"], acr: "password" });
    expect(claims).not.toHaveProperty("sid");
    expect(claims).not.toHaveProperty("nonce");
  });

  it("gives a server token the scope its client asks for, and refuses scopes we do not have", async () => {
    const client = await rpClient();
    const auth = basicAuth(client.id, client.secret);
    const res = await postForm("/oauth/token", { grant_type: "client_credentials", scope: "openid profile" }, auth);
    const body = (await res.json()) as Tokens;
    expect(body.scope).toBe("openid profile");
    expect(body).not.toHaveProperty("id_token");
    expect(decodeJwt(body.access_token).scope).toBe("openid profile");
    await expectOAuthError(
      await postForm("/oauth/token", { grant_type: "client_credentials", scope: "admin" }, auth),
      "invalid_scope",
    );
  });
});

describe("the API as a protected resource (RFC 9728, RFC 8707)", () => {
  it("publishes the API's metadata at the path-inserted well-known URL, and the origin's at the bare one", async () => {
    const api = await call("/.well-known/oauth-protected-resource/api/2");
    expect(api.status).toBe(200);
    expect(await api.json()).toMatchObject({
      resource: `${BASE}/api/2`,
      authorization_servers: [BASE],
      bearer_methods_supported: ["header", "body", "query"],
    });
    const origin = (await (await call("/.well-known/oauth-protected-resource")).json()) as Record<string, unknown>;
    expect(origin).toMatchObject({ resource: BASE, authorization_servers: [BASE] });
  });

  it("points every 401 of the API at that metadata, beside the challenge's error", async () => {
    const metadata = `resource_metadata="${BASE}/.well-known/oauth-protected-resource/api/2"`;
    const none = await call("/api/2/me");
    expect(none.status).toBe(401);
    expect(none.headers.get("WWW-Authenticate")).toBe(`Bearer ${metadata}, realm="api"`);
    const invalid = await call("/api/2/me", { headers: bearer("not-a-token") });
    expect(invalid.headers.get("WWW-Authenticate")).toBe(
      `Bearer ${metadata}, error="invalid_token", error_description="invalid"`,
    );
  });

  it("takes resource naming this API at the authorization and the token endpoint, its tokens for this API", async () => {
    const client = await rpClient({ autoApprove: true });
    const user = await rpUser();
    const res = await logIn(new Browser(), client.id, user, { resource: `${BASE}/api/2` });
    const code = redirectParameters(res).params.get("code")!;
    const tokens = await postForm(
      "/oauth/token",
      { grant_type: "authorization_code", code, redirect_uri: CALLBACK, resource: `${BASE}/api/2` },
      basicAuth(client.id, client.secret),
    );
    const { access_token: token } = (await tokens.json()) as Tokens;
    expect(decodeJwt(token).aud).toBe(`${BASE}/api`);
    expect((await call("/api/2/me", { headers: bearer(token) })).status).toBe(200);
    const server = await postForm(
      "/oauth/token",
      { grant_type: "client_credentials", resource: `${BASE}/api` },
      basicAuth(client.id, client.secret),
    );
    expect(decodeJwt(((await server.json()) as Tokens).access_token).aud).toBe(`${BASE}/api`);
  });

  it("refuses a resource that is not this API with invalid_target, at both endpoints", async () => {
    const client = await rpClient({ autoApprove: true });
    const user = await rpUser();
    const refused = redirectParameters(
      await new Browser().get(authorizePath(client.id, { resource: "https://elsewhere.example/api" })),
    );
    expect(refused.params.get("error")).toBe("invalid_target");
    expect(refused.params.get("iss")).toBe(BASE);
    const res = await logIn(new Browser(), client.id, user);
    const code = redirectParameters(res).params.get("code")!;
    const tokens = await postForm(
      "/oauth/token",
      { grant_type: "authorization_code", code, redirect_uri: CALLBACK, resource: "https://elsewhere.example/api" },
      basicAuth(client.id, client.secret),
    );
    await expectOAuthError(tokens, "invalid_target");
  });
});
