import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { s256Challenge } from "../src/kv/codes";
import { issueAccessToken } from "../src/oauth/tokens";
import { Browser, expectPage, redirectParameters } from "./helpers/browser";
import {
  basicAuth,
  bearer,
  call,
  container,
  expectOAuthError,
  postForm,
  serverToken,
  userTokenResponse,
} from "./helpers/http";
import { createClient, createUser } from "./helpers/seed";

const CALLBACK = "https://test.example/callback";
const VERIFIER = "a-code-verifier-of-forty-three-characters-or-more-0123456789";

async function newClient(overrides: Record<string, unknown> = {}) {
  const client = await createClient({
    grantTypes: ["password", "refresh_token", "client_credentials"],
    autoApprove: true,
    ...overrides,
  });
  return { ...client, redirectUris: [CALLBACK] };
}

let nextUser = 9_300 + Math.floor(Math.random() * 40) * 10;

async function signedIn(client: Awaited<ReturnType<typeof newClient>>) {
  const user = await createUser(nextUser++, { clients: [client.id] });
  const tokens = (await userTokenResponse(user, client)) as { access_token: string; refresh_token: string };
  return { user, tokens };
}

/** A public client, and a user's tokens it got as such a client does: login page, code with PKCE, client_id alone. */
async function publicClientSignedIn() {
  const client = await newClient({ public: true, grantTypes: ["authorization_code", "refresh_token"] });
  const user = await createUser(nextUser++, { clients: [client.id] });
  const browser = new Browser();
  const query = new URLSearchParams({
    client_id: client.id,
    redirect_uri: CALLBACK,
    response_type: "code",
    code_challenge: await s256Challenge(VERIFIER),
    code_challenge_method: "S256",
  });
  const login = await expectPage(await browser.get(`/oauth/authorize?${query}`), 200, "Sign in");
  const approved = await browser.submit(login, { action: "login", email: user.email, password: user.password });
  const res = await postForm("/oauth/token", {
    grant_type: "authorization_code",
    client_id: client.id,
    code: redirectParameters(approved).params.get("code")!,
    redirect_uri: CALLBACK,
    code_verifier: VERIFIER,
  });
  expect(res.status).toBe(200);
  return { client, tokens: (await res.json()) as { access_token: string; refresh_token: string } };
}

function revoke(client: { id: string; secret: string }, token: string, extra: Record<string, string> = {}) {
  return postForm("/oauth/revoke", { token, ...extra }, basicAuth(client.id, client.secret));
}

/** Revocation as a public client asks for it: its client_id in the body, no secret (RFC 7009 §2.1). */
function revokeByClientId(clientId: string, token: string) {
  return postForm("/oauth/revoke", { token, client_id: clientId });
}

async function introspect(client: { id: string; secret: string }, token: string) {
  const res = await postForm("/oauth/introspect", { token }, basicAuth(client.id, client.secret));
  expect(res.status).toBe(200);
  expect(res.headers.get("Cache-Control")).toBe("no-store");
  return (await res.json()) as Record<string, unknown>;
}

function refresh(client: { id: string; secret: string }, refreshToken: string) {
  return postForm(
    "/oauth/token",
    { grant_type: "refresh_token", refresh_token: refreshToken },
    basicAuth(client.id, client.secret),
  );
}

afterEach(() => {
  vi.useRealTimers();
});

describe("POST /oauth/revoke (RFC 7009)", () => {
  it("revokes a user access token: the API refuses it on the next call, and other tokens still work", async () => {
    const client = await newClient();
    const { tokens } = await signedIn(client);
    const other = await signedIn(client);
    expect((await call("/api/2/me", { headers: bearer(tokens.access_token) })).status).toBe(200);
    const res = await revoke(client, tokens.access_token);
    expect(res.status).toBe(200);
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    expect(await res.text()).toBe("");
    const me = await call("/api/2/me", { headers: bearer(tokens.access_token) });
    expect(me.status).toBe(401);
    expect(me.headers.get("WWW-Authenticate")).toContain('error="invalid_token"');
    expect((await container(me)).error).toMatchObject({
      error: "invalid_token",
      error_description: "The access token has been revoked",
    });
    expect((await call("/api/2/me", { headers: bearer(other.tokens.access_token) })).status).toBe(200);
  });

  it("revokes a server token, and does not count the refused calls against the quota", async () => {
    const client = await newClient();
    const revoked = await serverToken(client);
    const live = await serverToken(client);
    const before = (await container(await call("/api/2/clients", { headers: bearer(live) }))).request.remaining;
    await revoke(client, revoked, { token_type_hint: "access_token" });
    expect((await call("/api/2/clients", { headers: bearer(revoked) })).status).toBe(401);
    expect((await call("/api/2/clients", { headers: bearer(revoked) })).status).toBe(401);
    const after = (await container(await call("/api/2/clients", { headers: bearer(live) }))).request.remaining;
    expect(after).toBe(before - 1);
  });

  it("revokes a refresh token at once, with its whole grant: the family and the access tokens issued under it", async () => {
    const client = await newClient();
    const { tokens } = await signedIn(client);
    const rotated = (await (await refresh(client, tokens.refresh_token)).json()) as {
      access_token: string;
      refresh_token: string;
    };
    expect((await revoke(client, rotated.refresh_token, { token_type_hint: "refresh_token" })).status).toBe(200);
    expect((await refresh(client, rotated.refresh_token)).status).toBe(400);
    for (const accessToken of [tokens.access_token, rotated.access_token]) {
      expect((await call("/api/2/me", { headers: bearer(accessToken) })).status).toBe(401);
    }
  });

  it("leaves another client's tokens alone, and still answers 200", async () => {
    const client = await newClient();
    const stranger = await newClient();
    const { tokens } = await signedIn(client);
    expect((await revoke(stranger, tokens.access_token)).status).toBe(200);
    expect((await revoke(stranger, tokens.refresh_token)).status).toBe(200);
    expect((await call("/api/2/me", { headers: bearer(tokens.access_token) })).status).toBe(200);
    expect((await refresh(client, tokens.refresh_token)).status).toBe(200);
  });

  it.each([
    ["garbage", "not a token at all"],
    ["a JWT-shaped forgery", "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.c2ln"],
    ["an unknown refresh token", "A".repeat(43)],
  ])("answers 200 for %s", async (_, token) => {
    const client = await newClient();
    expect((await revoke(client, token)).status).toBe(200);
    expect((await revoke(client, token, { token_type_hint: "something_else" })).status).toBe(200);
  });

  it("refuses a revoked token with 401 before any other check, also on an endpoint not granted", async () => {
    const client = await newClient({ apiEndpoints: ["clients"] });
    const token = await serverToken(client);
    await revoke(client, token);
    const res = await call("/api/2/users", { headers: bearer(token) });
    expect(res.status).toBe(401);
    expect((await container(res)).error?.error_description).toBe("The access token has been revoked");
  });

  it("answers 200 for an expired token of the client's own", async () => {
    const client = await newClient();
    const expired = await issueAccessToken(
      env,
      { kind: "server", clientId: client.id, merchantId: 10, userId: null, scope: "", lifetime: 60 },
      Math.floor(Date.now() / 1000) - 3600,
    );
    expect((await revoke(client, expired)).status).toBe(200);
  });

  it("requires client authentication and a token", async () => {
    const client = await newClient();
    const { tokens } = await signedIn(client);
    const unauthenticated = await postForm("/oauth/revoke", { token: tokens.access_token });
    expect(unauthenticated.status).toBe(401);
    expect(await unauthenticated.json()).toMatchObject({ error: "invalid_client_id" });
    const wrongSecret = await postForm("/oauth/revoke", { token: tokens.access_token }, basicAuth(client.id, "wrong"));
    expect(wrongSecret.status).toBe(401);
    expect((await call("/api/2/me", { headers: bearer(tokens.access_token) })).status).toBe(200);
    const noToken = await postForm("/oauth/revoke", {}, basicAuth(client.id, client.secret));
    expect(noToken.status).toBe(400);
    expect(await noToken.json()).toMatchObject({ error: "invalid_request" });
  });

  it("lets a public client revoke its own refresh token with client_id alone, and with it the grant", async () => {
    const { client, tokens } = await publicClientSignedIn();
    const res = await revokeByClientId(client.id, tokens.refresh_token);
    expect(res.status).toBe(200);
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    const refreshed = await postForm("/oauth/token", {
      grant_type: "refresh_token",
      client_id: client.id,
      refresh_token: tokens.refresh_token,
    });
    await expectOAuthError(refreshed, "invalid_grant");
    expect((await call("/api/2/me", { headers: bearer(tokens.access_token) })).status).toBe(401);
  });

  it("lets a public client revoke its own access token with client_id alone", async () => {
    const { client, tokens } = await publicClientSignedIn();
    expect((await call("/api/2/me", { headers: bearer(tokens.access_token) })).status).toBe(200);
    expect((await revokeByClientId(client.id, tokens.access_token)).status).toBe(200);
    expect((await call("/api/2/me", { headers: bearer(tokens.access_token) })).status).toBe(401);
  });

  it("leaves another client's tokens alone when a public client presents them, and still answers 200", async () => {
    const { client: publicClient } = await publicClientSignedIn();
    const client = await newClient();
    const { tokens } = await signedIn(client);
    expect((await revokeByClientId(publicClient.id, tokens.access_token)).status).toBe(200);
    expect((await revokeByClientId(publicClient.id, tokens.refresh_token)).status).toBe(200);
    expect((await call("/api/2/me", { headers: bearer(tokens.access_token) })).status).toBe(200);
    expect((await refresh(client, tokens.refresh_token)).status).toBe(200);
  });

  it("never lets a confidential client revoke with client_id alone", async () => {
    const client = await newClient();
    const { tokens } = await signedIn(client);
    const res = await revokeByClientId(client.id, tokens.refresh_token);
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: "invalid_client_id" });
    expect((await refresh(client, tokens.refresh_token)).status).toBe(200);
  });

  it("accepts the client's credentials in the body too", async () => {
    const client = await newClient();
    const { tokens } = await signedIn(client);
    const res = await postForm("/oauth/revoke", {
      token: tokens.access_token,
      client_id: client.id,
      client_secret: client.secret,
    });
    expect(res.status).toBe(200);
    expect((await call("/api/2/me", { headers: bearer(tokens.access_token) })).status).toBe(401);
  });
});

describe("POST /oauth/introspect (RFC 7662)", () => {
  it("describes a live user access token of the client's own", async () => {
    const client = await newClient();
    const { user, tokens } = await signedIn(client);
    const body = await introspect(client, tokens.access_token);
    expect(body).toMatchObject({
      active: true,
      token_type: "Bearer",
      client_id: client.id,
      scope: "",
      sub: user.row.userId,
      aud: "https://accounts.test/api",
      iss: "https://accounts.test",
      token_use: "user",
    });
    expect(body.exp).toBeGreaterThan(Date.now() / 1000);
    expect(body.iat).toBeLessThanOrEqual(Date.now() / 1000);
    expect(body.jti).toEqual(expect.any(String));
  });

  it("describes a live server token and a live refresh token", async () => {
    const client = await newClient();
    expect(await introspect(client, await serverToken(client))).toMatchObject({
      active: true,
      sub: client.id,
      token_use: "server",
    });
    const { user, tokens } = await signedIn(client);
    const refresh = await introspect(client, tokens.refresh_token);
    expect(refresh).toMatchObject({ active: true, token_use: "refresh", client_id: client.id, sub: user.row.userId });
    // token_type is the access token's type (RFC 6749 §5.1), so a refresh token has none.
    expect(refresh).not.toHaveProperty("token_type");
  });

  it("says only active: false for another client's, revoked, rotated, expired, garbage tokens", async () => {
    const client = await newClient();
    const stranger = await newClient();
    const { tokens } = await signedIn(client);
    expect(await introspect(stranger, tokens.access_token)).toEqual({ active: false });
    expect(await introspect(stranger, tokens.refresh_token)).toEqual({ active: false });
    await refresh(client, tokens.refresh_token);
    expect(await introspect(client, tokens.refresh_token)).toEqual({ active: false });
    await revoke(client, tokens.access_token);
    expect(await introspect(client, tokens.access_token)).toEqual({ active: false });
    const expired = await issueAccessToken(
      env,
      { kind: "server", clientId: client.id, merchantId: 10, userId: null, scope: "", lifetime: 60 },
      Math.floor(Date.now() / 1000) - 3600,
    );
    expect(await introspect(client, expired)).toEqual({ active: false });
    expect(await introspect(client, "garbage")).toEqual({ active: false });
  });

  it("says active: false once the access token's time is up (a controlled clock)", async () => {
    const client = await newClient({ accessTokenLifetime: 60 });
    const token = await serverToken(client);
    const issued = Date.now();
    vi.useFakeTimers({ toFake: ["Date"], now: issued + 59_000 });
    expect(await introspect(client, token)).toMatchObject({ active: true });
    vi.setSystemTime(issued + 61_000);
    expect(await introspect(client, token)).toEqual({ active: false });
  });

  it("says active: false for a user who has since been blocked", async () => {
    const client = await newClient();
    const { user, tokens } = await signedIn(client);
    await createUser(Number(user.row.userId), { ...user.row, status: -2 });
    expect(await introspect(client, tokens.access_token)).toEqual({ active: false });
    expect(await introspect(client, tokens.refresh_token)).toEqual({ active: false });
  });

  it("requires client authentication and a token", async () => {
    const res = await postForm("/oauth/introspect", { token: "anything" });
    expect(res.status).toBe(401);
    const client = await newClient();
    const noToken = await postForm("/oauth/introspect", {}, basicAuth(client.id, client.secret));
    expect(noToken.status).toBe(400);
    expect(await noToken.json()).toMatchObject({ error: "invalid_request" });
  });

  it("refuses a public client by client_id alone, also for its own token (RFC 7662 §2.1)", async () => {
    const { client, tokens } = await publicClientSignedIn();
    const res = await postForm("/oauth/introspect", { token: tokens.refresh_token, client_id: client.id });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: "invalid_client_id" });
  });
});
