import { env } from "cloudflare:workers";
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../src/db/client";
import { refreshTokens } from "../src/db/schema";
import {
  appClient,
  basicAuth,
  call,
  erik,
  fjordClient,
  ingrid,
  kari,
  postForm,
  userTokenResponse,
  webClient,
} from "./helpers/http";
import { createClient, createUser, importData } from "./helpers/seed";

type OAuthErrorBody = { error: string; error_code: number; type: string; error_description: string };

async function token(
  fields: Record<string, string>,
  headers: Record<string, string> = basicAuth(webClient.id, webClient.secret),
) {
  const res = await postForm("/oauth/token", fields, headers);
  return { res, body: (await res.json()) as Record<string, unknown> };
}

function expectOAuthError(res: Response, body: Record<string, unknown>, status: number, error: string) {
  expect(res.status).toBe(status);
  expect(body).toMatchObject({ error, error_code: status, type: "OAuthException" });
  expect(typeof (body as OAuthErrorBody).error_description).toBe("string");
  expect(res.headers.get("Cache-Control")).toBe("no-store");
}

describe("client_credentials", () => {
  it("issues a server token with HTTP Basic client authentication", async () => {
    const { res, body } = await token({ grant_type: "client_credentials" });
    expect(res.status).toBe(200);
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    expect(body).toMatchObject({ token_type: "Bearer", expires_in: 604800, scope: "", is_admin: false });
    expect(Math.abs((body.server_time as number) - Date.now() / 1000)).toBeLessThan(5);
    expect(body).not.toHaveProperty("refresh_token");
  });

  it("issues a server token with body client authentication", async () => {
    const { res, body } = await token(
      { grant_type: "client_credentials", client_id: appClient.id, client_secret: appClient.secret },
      {},
    );
    expect(res.status).toBe(200);
    expect(body.expires_in).toBe(3600);
  });

  it("signs a JWT that verifies against the published JWKS", async () => {
    const { body } = await token({ grant_type: "client_credentials" });
    const jwks = await (await call("/oauth/jwks")).json();
    expect(await (await call("/.well-known/jwks.json")).json()).toEqual(jwks);
    expect(JSON.stringify(jwks)).not.toContain('"d"');
    const { payload, protectedHeader } = await jwtVerify(
      body.access_token as string,
      createLocalJWKSet(jwks as never),
      {
        issuer: "https://accounts.test",
        audience: "https://accounts.test/api",
      },
    );
    expect(protectedHeader).toMatchObject({ alg: "EdDSA", typ: "at+jwt" });
    expect(protectedHeader.kid).toBeTruthy();
    expect(payload).toMatchObject({ sub: webClient.id, client_id: webClient.id, token_use: "server", mid: 10 });
    expect(payload.exp! - payload.iat!).toBe(604800);
  });

  it("issues a token for a registered resource to a JWT-enabled client", async () => {
    const { res, body } = await token({ grant_type: "client_credentials", resource: "api.nordicdaily.example" });
    expect(res.status).toBe(200);
    const [, payload] = (body.access_token as string).split(".");
    expect(JSON.parse(atob(payload!.replace(/-/g, "+").replace(/_/g, "/"))).aud).toBe("api.nordicdaily.example");
  });

  it("refuses a resource that is not registered for the client", async () => {
    const { res, body } = await token({ grant_type: "client_credentials", resource: "api.fjord.example" });
    expectOAuthError(res, body, 400, "invalid_target");
  });

  it("refuses a resource to a client that is not JWT-enabled", async () => {
    const { res, body } = await token(
      { grant_type: "client_credentials", resource: "api.nordicdaily.example" },
      basicAuth(appClient.id, appClient.secret),
    );
    expectOAuthError(res, body, 400, "unauthorized_client");
  });
});

describe("client authentication failures", () => {
  it("refuses HTTP Basic and body credentials at once", async () => {
    const { res, body } = await token({
      grant_type: "client_credentials",
      client_id: webClient.id,
      client_secret: webClient.secret,
    });
    expectOAuthError(res, body, 401, "invalid_client_id");
  });

  it("refuses a body client_id that differs from the Basic one", async () => {
    const { res, body } = await token({ grant_type: "client_credentials", client_id: appClient.id });
    expectOAuthError(res, body, 401, "invalid_client_id");
  });

  it("refuses an unknown client", async () => {
    const { res, body } = await token(
      { grant_type: "client_credentials" },
      basicAuth("ffffffffffffffffffffffff", "whatever-secret-123"),
    );
    expectOAuthError(res, body, 401, "invalid_client_id");
    expect(res.headers.get("WWW-Authenticate")).toContain("Basic");
  });

  it("refuses a wrong secret, in the body too", async () => {
    const { res, body } = await token(
      { grant_type: "client_credentials", client_id: webClient.id, client_secret: `${webClient.secret}x` },
      {},
    );
    expectOAuthError(res, body, 401, "invalid_client_id");
  });

  it("refuses a request without client credentials", async () => {
    const { res, body } = await token({ grant_type: "client_credentials" }, {});
    expectOAuthError(res, body, 401, "invalid_client_id");
  });

  it("refuses malformed Basic credentials", async () => {
    const { res, body } = await token({ grant_type: "client_credentials" }, { Authorization: "Basic %%%not-base64" });
    expectOAuthError(res, body, 401, "invalid_client_id");
    const noColon = await token(
      { grant_type: "client_credentials" },
      { Authorization: `Basic ${btoa("no-colon-here")}` },
    );
    expectOAuthError(noColon.res, noColon.body, 401, "invalid_client_id");
  });

  it("accepts a rotated secret at once, though the old record is cached", async () => {
    const client = await createClient();
    expect((await token({ grant_type: "client_credentials" }, basicAuth(client.id, client.secret))).res.status).toBe(
      200,
    );
    const secret = `rotated-${crypto.randomUUID()}`;
    await importData({
      clients: [{ id: client.id, secret, name: "Rotated", merchantId: 10, grantTypes: ["client_credentials"] }],
    });
    const { res } = await token({ grant_type: "client_credentials" }, basicAuth(client.id, secret));
    expect(res.status).toBe(200);
  });

  it("skips the hash only for the exact secret that last verified, and forgets it when the secret changes", async () => {
    const client = await createClient();
    const status = async (secret: string) =>
      (await token({ grant_type: "client_credentials" }, basicAuth(client.id, secret))).res.status;
    expect(await status(client.secret)).toBe(200);
    const last = client.secret.at(-1) === "a" ? "b" : "a";
    for (const nearMiss of [
      `${client.secret}x`,
      client.secret.slice(0, -1),
      `${client.secret.slice(0, -1)}${last}`,
      client.secret + client.secret,
      client.secret.toUpperCase(),
      "",
      webClient.secret,
    ]) {
      // Each near miss reloads the client and so forgets the verified secret: verify it again first.
      expect(await status(client.secret)).toBe(200);
      expect(await status(nearMiss), nearMiss).toBe(401);
    }
    expect(await status(client.secret)).toBe(200);
    const secret = `rotated-${crypto.randomUUID()}`;
    await importData({
      clients: [{ id: client.id, secret, name: "Rotated", merchantId: 10, grantTypes: ["client_credentials"] }],
    });
    expect(await status(secret)).toBe(200);
    expect(await status(client.secret)).toBe(401);
    expect(await status(secret)).toBe(200);
  });

  it("refuses a client whose IP allow-list does not hold the caller", async () => {
    const headers = basicAuth(fjordClient.id, fjordClient.secret);
    const refused = await token(
      { grant_type: "client_credentials" },
      { ...headers, "CF-Connecting-IP": "203.0.113.9" },
    );
    expectOAuthError(refused.res, refused.body, 403, "access_denied");
    expect((refused.body as OAuthErrorBody).error_description).toBe("Requesting IP is not whitelisted");
    const allowed = await token({ grant_type: "client_credentials" }, { ...headers, "CF-Connecting-IP": "127.0.0.1" });
    expect(allowed.res.status).toBe(200);
  });
});

describe("grant and request failures", () => {
  it("requires grant_type", async () => {
    const { res, body } = await token({});
    expectOAuthError(res, body, 400, "invalid_request");
    expect((body as OAuthErrorBody).error_description).toContain("grant_type");
  });

  it("refuses an unknown grant type", async () => {
    const { res, body } = await token({ grant_type: "magic" });
    expectOAuthError(res, body, 400, "unsupported_grant_type");
  });

  it("refuses a grant type the client is not allowed", async () => {
    const { res, body } = await token(
      {
        grant_type: "password",
        username: ingrid.email,
        password: ingrid.password,
        redirect_uri: appClient.redirectUris[0]!,
      },
      basicAuth(appClient.id, appClient.secret),
    );
    expectOAuthError(res, body, 400, "unauthorized_client");
  });

  it("refuses a repeated parameter", async () => {
    const res = await call("/oauth/token", {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", ...basicAuth(webClient.id, webClient.secret) },
      body: "grant_type=client_credentials&grant_type=password",
    });
    expectOAuthError(res, (await res.json()) as Record<string, unknown>, 400, "invalid_request");
  });

  it("refuses a body that is not form-encoded", async () => {
    const res = await call("/oauth/token", {
      method: "POST",
      headers: { "Content-Type": "application/json", ...basicAuth(webClient.id, webClient.secret) },
      body: JSON.stringify({ grant_type: "client_credentials" }),
    });
    expectOAuthError(res, (await res.json()) as Record<string, unknown>, 400, "invalid_request");
  });

  it("refuses an oversized body with 413", async () => {
    const { res, body } = await token({ grant_type: "client_credentials", padding: "x".repeat(70_000) });
    expect(res.status).toBe(413);
    expect(body).toMatchObject({ error: "invalid_request", error_code: 413 });
  });

  it("refuses a scope this service does not define", async () => {
    const { res, body } = await token({ grant_type: "client_credentials", scope: "admin" });
    expectOAuthError(res, body, 400, "invalid_scope");
  });
});

describe("password", () => {
  const redirect = webClient.redirectUris[0]!;
  /** The password grant's fields for a user, with overrides. */
  const signIn = (user: { email: string; password: string }, extra: Record<string, string> = {}) => ({
    grant_type: "password",
    username: user.email,
    password: user.password,
    redirect_uri: redirect,
    ...extra,
  });

  it("issues a user token with a refresh token that carries its grant, whose row holds no secret", async () => {
    const body = await userTokenResponse(ingrid);
    expect(body).toMatchObject({
      token_type: "Bearer",
      expires_in: 604800,
      scope: "",
      user_id: "1001",
      is_admin: false,
    });
    const refresh = body.refresh_token as string;
    // Its grant's locator, its generation, its payload and its MAC (src/oauth/self-contained-refresh-tokens.ts).
    expect(refresh).toMatch(/^[A-Za-z0-9_-]{22}\.0\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    const locator = refresh.slice(0, 22);
    const rows = await openDatabase(env.DB).select().from(refreshTokens).all();
    const stored = rows.find((r) => r.tokenHash === `pt:${locator}`);
    expect(stored).toMatchObject({ clientId: webClient.id, userId: 1001, revoked: null, secretHash: null });
    expect(stored!.expires - stored!.created).toBe(365 * 24 * 3600);
    expect(JSON.stringify(rows)).not.toContain(refresh);
  });

  it("accepts the username in any letter case", async () => {
    const { res } = await token(signIn({ ...ingrid, email: ingrid.email.toUpperCase() }));
    expect(res.status).toBe(200);
  });

  it("refuses a wrong password and an unknown user alike", async () => {
    const wrong = await token(signIn({ ...ingrid, password: "wrong password" }));
    expectOAuthError(wrong.res, wrong.body, 400, "invalid_grant");
    const unknown = await token(signIn({ email: "nobody@example.org", password: "wrong password" }));
    expectOAuthError(unknown.res, unknown.body, 400, "invalid_grant");
    expect(unknown.body.error_description).toBe(wrong.body.error_description);
  });

  it("gives no token to a blocked user", async () => {
    const { res, body } = await token(signIn(kari));
    expectOAuthError(res, body, 400, "invalid_grant");
    expect(body.error_description).toContain("blocked");
  });

  it.each([
    [-1, "inactive"],
    [-3, "deleted"],
  ])("gives no token to a user with status %i (%s)", async (status, word) => {
    const { res, body } = await token(signIn(await createUser(9100 - status, { status })));
    expectOAuthError(res, body, 400, "invalid_grant");
    expect(body.error_description).toContain(word);
    expect(body).not.toHaveProperty("access_token");
  });

  it("refuses a redirect URI that is not registered exactly", async () => {
    for (const uri of [
      `${redirect}/`,
      redirect.toUpperCase(),
      `${redirect}?x=1`,
      "https://evil.example/auth/callback",
    ]) {
      const { res, body } = await token(signIn(ingrid, { redirect_uri: uri }));
      expectOAuthError(res, body, 400, "redirect_uri_mismatch");
    }
  });

  it("refuses a registered redirect URI that today's rules would not accept", async () => {
    const stale = "https://test.example/cb?next=%20https://evil.example";
    const client = await createClient();
    await env.DB.prepare("UPDATE clients SET redirect_uris = ? WHERE id = ?")
      .bind(JSON.stringify([stale]), client.id)
      .run();
    const user = await createUser(9150, { clients: [client.id] });
    const { res, body } = await token(signIn(user, { redirect_uri: stale }), basicAuth(client.id, client.secret));
    expectOAuthError(res, body, 400, "redirect_uri_mismatch");
  });

  it.each(["username", "password", "redirect_uri"])("requires %s", async (missing) => {
    const fields: Record<string, string> = signIn(erik);
    delete fields[missing];
    const { res, body } = await token(fields);
    expectOAuthError(res, body, 400, "invalid_request");
    expect(body.error_description).toContain(missing);
  });

  it("refuses a resource indicator that is not this API, with invalid_target", async () => {
    const { res, body } = await token(signIn(ingrid, { resource: "api.nordicdaily.example" }));
    expectOAuthError(res, body, 400, "invalid_target");
  });

  it("issues user tokens whose header names the signing key", async () => {
    const body = await userTokenResponse(erik);
    expect(decodeProtectedHeader(body.access_token).kid).toBe(JSON.parse(env.TOKEN_SIGNING_KEYS)[0].kid);
  });
});

describe("password guessing", () => {
  const redirect = "https://test.example/callback";
  const attempt = (client: { id: string; secret: string }, password: string, username = erik.email) =>
    token({ grant_type: "password", username, password, redirect_uri: redirect }, basicAuth(client.id, client.secret));

  it("holds the account from this network for the client after 5 failures, before checking even a right password", async () => {
    const client = await createClient({ autoApprove: true });
    for (let i = 0; i < 5; i++) {
      const { res, body } = await attempt(client, `wrong guess ${i}`);
      expectOAuthError(res, body, 400, "invalid_grant");
    }
    const { res, body } = await attempt(client, erik.password);
    expectOAuthError(res, body, 420, "access_denied");
    expect(body).not.toHaveProperty("access_token");
    const retryAfter = Number(res.headers.get("Retry-After"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(900);
    expect((await attempt(await createClient({ autoApprove: true }), erik.password)).res.status).toBe(200);
  });

  it("forgets earlier failures once the right password is given", async () => {
    const client = await createClient({ autoApprove: true });
    for (let i = 0; i < 4; i++) expect((await attempt(client, "wrong")).res.status).toBe(400);
    expect((await attempt(client, erik.password)).res.status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await attempt(client, "wrong")).res.status).toBe(400);
    expect((await attempt(client, "wrong")).res.status).toBe(420);
  });

  it("counts a user's attempts together, whichever of their addresses is tried", async () => {
    const client = await createClient({ autoApprove: true });
    const [primary, work] = [ingrid.email, "ingrid@work.example"];
    for (const username of [primary, work, primary, work, work]) {
      expect((await attempt(client, "wrong", username)).res.status).toBe(400);
    }
    expect((await attempt(client, "wrong", primary)).res.status).toBe(420);
    expect((await attempt(client, "wrong", work)).res.status).toBe(420);
  });

  it("throttles guesses for a name that is no user's just the same", async () => {
    const client = await createClient({ autoApprove: true });
    for (let i = 0; i < 5; i++) expect((await attempt(client, "wrong", "nobody@example.org")).res.status).toBe(400);
    const { res, body } = await attempt(client, "wrong", "NOBODY@example.org");
    expectOAuthError(res, body, 420, "access_denied");
  });

  it("counts guesses sent in parallel", async () => {
    const client = await createClient({ autoApprove: true });
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => attempt(client, `parallel ${i}`)));
    const statuses = results.map(({ res }) => res.status).sort();
    expect(statuses).toEqual([400, 400, 400, 400, 400, 420, 420, 420, 420, 420]);
  });
});
