/**
 * Client registration (RFC 7591) and its management (RFC 7592), and native apps (RFC 8252):
 * what a registered client can then do, and every refusal.
 */
import { decodeProtectedHeader } from "jose";
import { describe, expect, it } from "vitest";
import { s256Challenge } from "../src/kv/codes";
import { importFileSchema } from "../src/schemas/import";
import { Browser, expectPage, redirectParameters } from "./helpers/browser";
import { BASE, basicAuth, bearer, call, expectOAuthError, postForm, serverToken } from "./helpers/http";
import { createClient, createUser } from "./helpers/seed";

const CALLBACK = "https://registered.example/callback";
const VERIFIER = "a-code-verifier-of-forty-three-characters-or-more-0123456789";

let nextUser = 9_900 + Math.floor(Math.random() * 40) * 10;

type Registration = {
  client_id: string;
  client_secret?: string;
  client_secret_expires_at?: number;
  registration_access_token: string;
  registration_client_uri: string;
  [member: string]: unknown;
};

async function adminToken() {
  const admin = await createClient({ admin: true });
  return serverToken(admin);
}

async function register(metadata: Record<string, unknown>, token?: string) {
  return call("/oauth/register", {
    method: "POST",
    headers: { "Content-Type": "application/json", ...bearer(token ?? (await adminToken())) },
    body: JSON.stringify(metadata),
  });
}

async function registered(metadata: Record<string, unknown>): Promise<Registration> {
  const res = await register(metadata);
  expect(res.status).toBe(201);
  return (await res.json()) as Registration;
}

async function expectRegistrationError(res: Response, error: string) {
  expect(res.status).toBe(400);
  expect(await res.json()).toMatchObject({ error });
}

/** The registration's own endpoint, with its access token (or `token`). */
function manage(r: Registration, init: RequestInit = {}, token = r.registration_access_token) {
  return call(new URL(r.registration_client_uri).pathname, {
    ...init,
    headers: { ...bearer(token), ...(init.body && { "Content-Type": "application/json" }), ...init.headers },
  });
}

async function signInCode(clientId: string, redirectUri: string, extra: Record<string, string> = {}) {
  const user = await createUser(nextUser++, { clients: [] });
  const browser = new Browser();
  const query = new URLSearchParams({
    client_id: clientId,
    redirect_uri: redirectUri,
    response_type: "code",
    scope: "openid",
    state: "reg",
    ...extra,
  });
  const page = await expectPage(await browser.get(`/oauth/authorize?${query}`), 200, "Sign in");
  const consent = await (
    await browser.submit(page, { action: "login", email: user.email, password: user.password })
  ).text();
  return { page, code: redirectParameters(await browser.submit(consent, { action: "approve" })).params.get("code")! };
}

describe("POST /oauth/register (RFC 7591)", () => {
  it("registers a confidential client for the admin's merchant; its credentials work for the code flow", async () => {
    const res = await register({
      client_name: "Registered Web",
      redirect_uris: [CALLBACK],
      grant_types: ["authorization_code", "refresh_token"],
      token_endpoint_auth_method: "client_secret_post",
      id_token_signed_response_alg: "EdDSA",
      logo_uri: "https://registered.example/logo.png",
      post_logout_redirect_uris: ["https://registered.example/bye"],
      jwks: { keys: [] },
      contacts: ["ops@registered.example"],
    });
    expect(res.status).toBe(201);
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    const r = (await res.json()) as Registration;
    expect(r).toMatchObject({
      client_name: "Registered Web",
      redirect_uris: [CALLBACK],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "client_secret_post",
      id_token_signed_response_alg: "EdDSA",
      logo_uri: "https://registered.example/logo.png",
      post_logout_redirect_uris: ["https://registered.example/bye"],
      client_secret_expires_at: 0,
      registration_client_uri: `${BASE}/oauth/register/${r.client_id}`,
    });
    expect(r).not.toHaveProperty("jwks");
    expect(r.client_id).toMatch(/^[0-9a-f]{24}$/);
    expect(r.client_secret!.length).toBeGreaterThanOrEqual(43);
    expect(r.registration_access_token.length).toBeGreaterThanOrEqual(43);

    // The login page shows the client's name and logo, the logo its one allowed image.
    const { page, code } = await signInCode(r.client_id, CALLBACK);
    expect(page).toContain("Sign in to continue to Registered Web.");
    expect(page).toContain('<img class="logo" src="https://registered.example/logo.png" alt=""');
    const tokens = await postForm("/oauth/token", {
      grant_type: "authorization_code",
      code,
      redirect_uri: CALLBACK,
      client_id: r.client_id,
      client_secret: r.client_secret!,
    });
    const body = (await tokens.json()) as { id_token: string };
    expect(decodeProtectedHeader(body.id_token).alg).toBe("EdDSA");
  });

  it("puts the logo's URL alone in the login page's img-src", async () => {
    const r = await registered({ redirect_uris: [CALLBACK], logo_uri: "https://registered.example/a;b.png" });
    const query = new URLSearchParams({ client_id: r.client_id, redirect_uri: CALLBACK, response_type: "code" });
    const res = await new Browser().get(`/oauth/authorize?${query}`);
    const csp = res.headers.get("Content-Security-Policy")!;
    expect(csp).toContain("img-src https://registered.example/a%3Bb.png;");
  });

  it("registers a server-to-server client with client_credentials alone, as SPiD's register did", async () => {
    const r = await registered({ client_name: "Batch", grant_types: ["client_credentials"], response_types: [] });
    expect(r).toMatchObject({ redirect_uris: [], response_types: [] });
    const res = await postForm(
      "/oauth/token",
      { grant_type: "client_credentials" },
      basicAuth(r.client_id, r.client_secret!),
    );
    expect(res.status).toBe(200);
  });

  it("registers a public native app: no secret, a loopback redirect on any port, PKCE and client_id alone", async () => {
    const r = await registered({
      client_name: "Desktop App",
      redirect_uris: ["http://127.0.0.1/callback", "http://[::1]/callback"],
      grant_types: ["authorization_code", "refresh_token"],
      token_endpoint_auth_method: "none",
    });
    expect(r).not.toHaveProperty("client_secret");
    expect(r).not.toHaveProperty("client_secret_expires_at");
    expect(r.token_endpoint_auth_method).toBe("none");
    const redirectUri = "http://127.0.0.1:53123/callback";
    const { code } = await signInCode(r.client_id, redirectUri, {
      code_challenge: await s256Challenge(VERIFIER),
      code_challenge_method: "S256",
    });
    const res = await postForm("/oauth/token", {
      grant_type: "authorization_code",
      code,
      redirect_uri: redirectUri,
      client_id: r.client_id,
      code_verifier: VERIFIER,
    });
    expect(res.status).toBe(200);
    // Only the port may differ: another path, or another host, is not registered.
    for (const uri of [
      "http://127.0.0.1:53123/other",
      "http://localhost:53123/callback",
      "http://127.0.0.2/callback",
    ]) {
      const query = new URLSearchParams({ client_id: r.client_id, redirect_uri: uri, response_type: "code" });
      const page = await new Browser().get(`/oauth/authorize?${query}&code_challenge_method=S256`);
      expect(page.headers.get("Location") ?? "").not.toContain(uri);
    }
  });

  it("limits the client to the scope it registered", async () => {
    const r = await registered({
      redirect_uris: [CALLBACK],
      grant_types: ["authorization_code", "client_credentials"],
      scope: "openid email",
    });
    expect(r.scope).toBe("openid email");
    const query = new URLSearchParams({
      client_id: r.client_id,
      redirect_uri: CALLBACK,
      response_type: "code",
      scope: "openid profile",
      state: "s",
    });
    const { params } = redirectParameters(await call(`/oauth/authorize?${query}`, { redirect: "manual" }));
    expect(params.get("error")).toBe("invalid_scope");
    const auth = basicAuth(r.client_id, r.client_secret!);
    await expectOAuthError(
      await postForm("/oauth/token", { grant_type: "client_credentials", scope: "profile" }, auth),
      "invalid_scope",
    );
    const granted = await postForm("/oauth/token", { grant_type: "client_credentials", scope: "email" }, auth);
    expect(((await granted.json()) as { scope: string }).scope).toBe("email");
  });

  it.each([
    ["an http redirect URI", { redirect_uris: ["http://registered.example/cb"] }, "invalid_redirect_uri"],
    [
      "a loopback redirect URI for a confidential client",
      { redirect_uris: ["http://127.0.0.1/cb"] },
      "invalid_redirect_uri",
    ],
    ["a redirect URI with a fragment", { redirect_uris: [`${CALLBACK}#x`] }, "invalid_redirect_uri"],
    ["no redirect URI for the code grant", {}, "invalid_redirect_uri"],
    [
      "an unregistered post-logout URI kind",
      { redirect_uris: [CALLBACK], post_logout_redirect_uris: ["javascript:alert(1)"] },
      "invalid_redirect_uri",
    ],
    ["the password grant", { redirect_uris: [CALLBACK], grant_types: ["password"] }, "invalid_client_metadata"],
    [
      "client_credentials for a public client",
      { grant_types: ["client_credentials"], response_types: [], token_endpoint_auth_method: "none" },
      "invalid_client_metadata",
    ],
    ["an implicit response type", { redirect_uris: [CALLBACK], response_types: ["token"] }, "invalid_client_metadata"],
    [
      "a code grant without the code response type",
      { redirect_uris: [CALLBACK], response_types: [] },
      "invalid_client_metadata",
    ],
    [
      "an unknown authentication method",
      { redirect_uris: [CALLBACK], token_endpoint_auth_method: "private_key_jwt" },
      "invalid_client_metadata",
    ],
    [
      "unsigned ID tokens",
      { redirect_uris: [CALLBACK], id_token_signed_response_alg: "none" },
      "invalid_client_metadata",
    ],
    ["a scope we do not define", { redirect_uris: [CALLBACK], scope: "openid admin" }, "invalid_client_metadata"],
    [
      "an http logo",
      { redirect_uris: [CALLBACK], logo_uri: "http://registered.example/logo.png" },
      "invalid_client_metadata",
    ],
    [
      "an http back-channel logout URI",
      { redirect_uris: [CALLBACK], backchannel_logout_uri: "http://registered.example/bc" },
      "invalid_client_metadata",
    ],
    ["a name that is no string", { redirect_uris: [CALLBACK], client_name: 42 }, "invalid_client_metadata"],
    [
      "too many redirect URIs",
      { redirect_uris: Array.from({ length: 21 }, (_, i) => `${CALLBACK}/${i}`) },
      "invalid_client_metadata",
    ],
  ])("refuses %s", async (_, metadata, error) => {
    await expectRegistrationError(await register(metadata), error);
  });

  it("refuses a body that is no JSON object", async () => {
    const token = await adminToken();
    for (const [body, type] of [
      ["not json", "application/json"],
      ["[]", "application/json"],
      ["client_name=x", "application/x-www-form-urlencoded"],
    ]) {
      const res = await call("/oauth/register", {
        method: "POST",
        headers: { "Content-Type": type!, ...bearer(token) },
        body,
      });
      await expectRegistrationError(res, "invalid_client_metadata");
    }
  });

  it("gives a registered client the allow-list of the admin that registered it", async () => {
    const admin = await createClient({ admin: true, ipWhitelist: ["192.0.2.1"] });
    const adminToken = (
      (await (
        await postForm(
          "/oauth/token",
          { grant_type: "client_credentials" },
          { ...basicAuth(admin.id, admin.secret), "CF-Connecting-IP": "192.0.2.1" },
        )
      ).json()) as { access_token: string }
    ).access_token;
    const res = await call("/oauth/register", {
      method: "POST",
      headers: { "Content-Type": "application/json", "CF-Connecting-IP": "192.0.2.1", ...bearer(adminToken) },
      body: JSON.stringify({ grant_types: ["client_credentials"], response_types: [] }),
    });
    const r = (await res.json()) as Registration;
    const from = (ip: string) =>
      postForm(
        "/oauth/token",
        { grant_type: "client_credentials" },
        { ...basicAuth(r.client_id, r.client_secret!), "CF-Connecting-IP": ip },
      );
    expect((await from("192.0.2.1")).status).toBe(200);
    const elsewhere = await from("198.51.100.9");
    expect(elsewhere.status).toBe(403);
    expect(await elsewhere.json()).toMatchObject({ error_description: "Requesting IP is not whitelisted" });
  });

  it("grants a registered client the admin's endpoints but registering", async () => {
    const admin = await createClient({ admin: true, apiEndpoints: ["register", "products"] });
    const r = (await (
      await register({ grant_types: ["client_credentials"], response_types: [] }, await serverToken(admin))
    ).json()) as Registration;
    const token = (
      (await (
        await postForm("/oauth/token", { grant_type: "client_credentials" }, basicAuth(r.client_id, r.client_secret!))
      ).json()) as { access_token: string }
    ).access_token;
    const refused = await register({ grant_types: ["client_credentials"], response_types: [] }, token);
    expect(refused.status).toBe(403);
    expect((await call("/api/2/products", { headers: bearer(token) })).status).toBe(404);
    expect((await call("/api/2/users", { headers: bearer(token) })).status).toBe(403);
  });

  it("authenticates a registered client only the way it registered", async () => {
    const r = await registered({
      grant_types: ["client_credentials"],
      response_types: [],
      token_endpoint_auth_method: "client_secret_post",
    });
    const basic = await postForm(
      "/oauth/token",
      { grant_type: "client_credentials" },
      basicAuth(r.client_id, r.client_secret!),
    );
    expect(basic.status).toBe(401);
    const post = await postForm("/oauth/token", {
      grant_type: "client_credentials",
      client_id: r.client_id,
      client_secret: r.client_secret!,
    });
    expect(post.status).toBe(200);
  });

  it("releases no claim by the claims parameter beyond the scope the client registered", async () => {
    const r = await registered({ redirect_uris: [CALLBACK], scope: "openid profile" });
    const claims = JSON.stringify({
      userinfo: { email: null, phone_number: null, name: null },
      id_token: { email: null },
    });
    const { code } = await signInCode(r.client_id, CALLBACK, { claims });
    const tokens = (await (
      await postForm(
        "/oauth/token",
        { grant_type: "authorization_code", code, redirect_uri: CALLBACK },
        basicAuth(r.client_id, r.client_secret!),
      )
    ).json()) as { access_token: string; id_token: string };
    const userinfo = (await (await call("/oauth/userinfo", { headers: bearer(tokens.access_token) })).json()) as Record<
      string,
      unknown
    >;
    expect(userinfo).not.toHaveProperty("email");
    expect(userinfo).not.toHaveProperty("phone_number");
    expect(JSON.parse(atob(tokens.id_token.split(".")[1]!.replace(/-/g, "+").replace(/_/g, "/")))).not.toHaveProperty(
      "email",
    );
  });

  it("takes a server token of an admin client only", async () => {
    const plain = await createClient();
    const refused = await register({ redirect_uris: [CALLBACK] }, await serverToken(plain));
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({
      error: "insufficient_scope",
      error_description: "Your client doesn't have administration rights for this client",
    });
    const anonymous = await call("/oauth/register", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: "{}",
    });
    expect(anonymous.status).toBe(401);
  });
});

describe("/oauth/register/{clientId} (RFC 7592)", () => {
  it("reads the registration with its access token, never the secret", async () => {
    const r = await registered({ client_name: "Readable", redirect_uris: [CALLBACK] });
    const res = await manage(r);
    expect(res.status).toBe(200);
    const read = (await res.json()) as Record<string, unknown>;
    expect(read).toMatchObject({ client_id: r.client_id, client_name: "Readable", redirect_uris: [CALLBACK] });
    expect(read).not.toHaveProperty("client_secret");
    expect(read).not.toHaveProperty("registration_access_token");
  });

  it("refuses another registration's token, a server token and an unknown client alike, with 401", async () => {
    const r = await registered({ redirect_uris: [CALLBACK] });
    const other = await registered({ redirect_uris: [CALLBACK] });
    const wrong = [
      await manage(r, {}, other.registration_access_token),
      await manage(r, {}, await adminToken()),
      await call(`/oauth/register/${"0".repeat(24)}`, { headers: bearer(r.registration_access_token) }),
      await call(`/oauth/register/${r.client_id}`),
    ];
    for (const res of wrong) {
      expect(res.status).toBe(401);
      expect(res.headers.get("WWW-Authenticate")).toContain("Bearer");
    }
  });

  it("replaces the metadata: the new redirect URI works at once, the old one no longer", async () => {
    const r = await registered({ client_name: "Before", redirect_uris: [CALLBACK] });
    const next = "https://registered.example/next";
    const res = await manage(r, {
      method: "PUT",
      body: JSON.stringify({
        client_id: r.client_id,
        client_secret: r.client_secret,
        client_name: "After",
        redirect_uris: [next],
      }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ client_name: "After", redirect_uris: [next] });
    const query = (uri: string) =>
      new URLSearchParams({ client_id: r.client_id, redirect_uri: uri, response_type: "code", scope: "openid" });
    await expectPage(await new Browser().get(`/oauth/authorize?${query(next)}`), 200, "Sign in");
    await expectPage(await new Browser().get(`/oauth/authorize?${query(CALLBACK)}`), 400, "Sign-in cannot start");
  });

  it("refuses an update naming another client, a wrong secret, or a switch to a public client", async () => {
    const r = await registered({ redirect_uris: [CALLBACK] });
    const put = (metadata: Record<string, unknown>) => manage(r, { method: "PUT", body: JSON.stringify(metadata) });
    await expectRegistrationError(
      await put({ client_id: "someone-else", redirect_uris: [CALLBACK] }),
      "invalid_request",
    );
    await expectRegistrationError(
      await put({ client_id: r.client_id, client_secret: "not-the-secret", redirect_uris: [CALLBACK] }),
      "invalid_request",
    );
    await expectRegistrationError(
      await put({ client_id: r.client_id, redirect_uris: [CALLBACK], token_endpoint_auth_method: "none" }),
      "invalid_client_metadata",
    );
  });

  it("deletes the client: 204, then its registration, its secret and its token are gone", async () => {
    const r = await registered({ grant_types: ["client_credentials"], response_types: [] });
    const auth = basicAuth(r.client_id, r.client_secret!);
    const token = (
      (await (await postForm("/oauth/token", { grant_type: "client_credentials" }, auth)).json()) as {
        access_token: string;
      }
    ).access_token;
    const res = await manage(r, { method: "DELETE" });
    expect(res.status).toBe(204);
    expect((await manage(r)).status).toBe(401);
    expect((await postForm("/oauth/token", { grant_type: "client_credentials" }, auth)).status).toBe(401);
    expect((await call("/api/2/clients", { headers: bearer(token) })).status).not.toBe(200);
  });
});

describe("the import's registration fields", () => {
  const client = (fields: Record<string, unknown>) =>
    importFileSchema.safeParse({ clients: [{ id: "imported-client", name: "c", merchantId: 1, ...fields }] });

  it("takes a public client without a secret, with loopback redirect URIs", () => {
    expect(
      client({ public: true, redirectUris: ["http://127.0.0.1/cb"], tokenEndpointAuthMethod: "none" }).success,
    ).toBe(true);
  });

  it.each([
    ["a confidential client without a secret", {}],
    [
      "a loopback redirect URI for a confidential client",
      { secret: "a secret of sixteen+", redirectUris: ["http://127.0.0.1/cb"] },
    ],
    [
      "authentication none for a confidential client",
      { secret: "a secret of sixteen+", tokenEndpointAuthMethod: "none" },
    ],
    ["an http logo", { secret: "a secret of sixteen+", logoUri: "http://x.example/logo.png" }],
    ["a scope we do not define", { secret: "a secret of sixteen+", scope: "openid admin" }],
  ])("refuses %s", (_, fields) => {
    expect(client(fields).success).toBe(false);
  });
});
