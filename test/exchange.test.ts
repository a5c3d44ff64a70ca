import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  basicAuth,
  bearer,
  call,
  claimsOf,
  container,
  expectOAuthError,
  fjordClient,
  postForm,
  serverToken,
  userTokenResponse,
  webClient,
} from "./helpers/http";
import { rateLimiterFor } from "../src/durable-objects/rate-limiter";
import { hashSecret } from "../src/security/data-protection";
import { createClient, createUser } from "./helpers/seed";

const CALLBACK = "https://test.example/callback";
const OTHER_CALLBACK = "https://test.example/other";

/** A client of merchant 10 that redeems codes and signs users in with a password. */
async function newClient(overrides: Record<string, unknown> = {}) {
  const client = await createClient({
    grantTypes: ["authorization_code", "password", "refresh_token", "client_credentials"],
    autoApprove: true,
    redirectUris: [CALLBACK, OTHER_CALLBACK],
    defaultRedirectUri: CALLBACK,
    ...overrides,
  });
  return { ...client, redirectUris: [CALLBACK] };
}

let nextUser = 9_100 + Math.floor(Math.random() * 40) * 10;

/** A user signed in at a fresh issuing client, and a fresh target client of the same merchant. */
async function setting() {
  const issuer = await newClient();
  const target = await newClient();
  const user = await createUser(nextUser++, { clients: [issuer.id] });
  const tokens = await userTokenResponse(user, issuer);
  return { issuer, target, user, userToken: tokens.access_token };
}

function exchange(token: string, fields: Record<string, string>, path = "/api/2/oauth/exchange") {
  return postForm(path, fields, bearer(token));
}

async function codeFor(token: string, fields: Record<string, string>): Promise<string> {
  const res = await exchange(token, fields);
  expect(res.status).toBe(200);
  return (await container(res)).data.code as string;
}

function redeem(client: { id: string; secret: string }, code: string, redirectUri = CALLBACK) {
  return postForm(
    "/oauth/token",
    { grant_type: "authorization_code", code, redirect_uri: redirectUri },
    basicAuth(client.id, client.secret),
  );
}

const expectInvalidGrant = (res: Response, description?: string) => expectOAuthError(res, "invalid_grant", description);

/** The access token is refused as revoked, and the refresh token no longer refreshes. */
async function expectGrantEnded(client: { id: string; secret: string }, tokens: Record<string, string>) {
  const me = await call("/api/2/me", { headers: bearer(tokens.access_token!) });
  expect(me.status).toBe(401);
  expect((await container(me)).error?.error_description).toBe("The access token has been revoked");
  const refreshed = await postForm(
    "/oauth/token",
    { grant_type: "refresh_token", refresh_token: tokens.refresh_token! },
    basicAuth(client.id, client.secret),
  );
  await expectInvalidGrant(refreshed);
}

afterEach(() => {
  vi.useRealTimers();
});

describe("POST /api/2/oauth/exchange: happy path", () => {
  it("answers the OAuth exchange object with a random one-time code", async () => {
    const { target, userToken } = await setting();
    const res = await exchange(userToken, { clientId: target.id, type: "code" });
    expect(res.status).toBe(200);
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    const body = await container(res);
    expect(body.object).toBe("OAuthExchange");
    expect(Object.keys(body.data)).toEqual(["code"]);
    // 256 bits, base64url.
    expect(body.data.code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await codeFor(userToken, { clientId: target.id, type: "code" })).not.toBe(body.data.code);
  });

  it("is the same operation at POST /oauth/exchange", async () => {
    const { target, userToken } = await setting();
    const res = await exchange(userToken, { clientId: target.id, type: "code" }, "/oauth/exchange");
    expect(res.status).toBe(200);
    const code = (await container(res)).data.code as string;
    expect((await redeem(target, code)).status).toBe(200);
  });

  it("lets the target client redeem a code for its own token for the same user, with a refresh token", async () => {
    const { target, user, userToken } = await setting();
    const code = await codeFor(userToken, { clientId: target.id, type: "code" });
    const res = await redeem(target, code);
    expect(res.status).toBe(200);
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    const tokens = (await res.json()) as Record<string, string>;
    expect(tokens).toMatchObject({ token_type: "Bearer", user_id: user.row.userId, is_admin: false });
    expect(claimsOf(tokens.access_token!)).toMatchObject({
      client_id: target.id,
      sub: user.row.userId,
      token_use: "user",
    });
    const me = await container(await call("/api/2/me", { headers: bearer(tokens.access_token!) }));
    expect(me.data.userId).toBe(user.row.userId);
    const refreshed = await postForm(
      "/oauth/token",
      { grant_type: "refresh_token", refresh_token: tokens.refresh_token! },
      basicAuth(target.id, target.secret),
    );
    expect(refreshed.status).toBe(200);
  });

  it("connects the user to the target client, so its user search finds them", async () => {
    const { target, user, userToken } = await setting();
    await redeem(target, await codeFor(userToken, { clientId: target.id, type: "code" }));
    const found = await call(`/api/2/users?userId=${user.row.userId}`, { headers: bearer(await serverToken(target)) });
    expect(found.status).toBe(200);
  });

  it("binds a code to a redirect URI given for it, when it is registered for the target", async () => {
    const { target, userToken } = await setting();
    const code = await codeFor(userToken, { clientId: target.id, type: "code", redirectUri: OTHER_CALLBACK });
    await expectInvalidGrant(await redeem(target, code, CALLBACK), "redirect URI");
    expect((await redeem(target, code, OTHER_CALLBACK)).status).toBe(200);
  });

  it("creates a session code bound to the redirect URI, which the token endpoint does not redeem", async () => {
    const { target, userToken } = await setting();
    const code = await codeFor(userToken, { clientId: target.id, type: "session", redirectUri: OTHER_CALLBACK });
    await expectInvalidGrant(await redeem(target, code, OTHER_CALLBACK), "invalid");
  });

  it("keeps only a keyed hash of the code in KV, with its binding and a 30-second expiry", async () => {
    const { issuer, target, user, userToken } = await setting();
    const before = Date.now();
    const code = await codeFor(userToken, { clientId: target.id, type: "session", redirectUri: OTHER_CALLBACK });
    const { keys } = await env.CODES.list({ prefix: "exchange:" });
    expect(keys.some((key) => key.name.includes(code))).toBe(false);
    const records = await Promise.all(keys.map((key) => env.CODES.get(key.name, "json")));
    const record = records.find((r) => (r as { issuingClientId: string }).issuingClientId === issuer.id) as Record<
      string,
      unknown
    >;
    expect(record).toMatchObject({
      type: "session",
      userId: Number(user.row.userId),
      issuingClientId: issuer.id,
      clientId: target.id,
      redirectUri: OTHER_CALLBACK,
    });
    expect(JSON.stringify(record)).not.toContain(code);
    expect(record.expiresAt).toBeGreaterThanOrEqual(before + 30_000);
    expect(record.expiresAt).toBeLessThanOrEqual(Date.now() + 30_000);
  });
});

describe("POST /api/2/oauth/exchange: the spec's failures", () => {
  async function expectFailure(res: Response, status: number, description: string) {
    expect(res.status).toBe(status);
    expect((await container(res)).error).toMatchObject({ error_code: status, error_description: description });
  }

  it("400 Required client ID missing", async () => {
    const { userToken } = await setting();
    await expectFailure(await exchange(userToken, { type: "code" }), 400, "Required client ID missing");
    await expectFailure(await exchange(userToken, { clientId: "", type: "code" }), 400, "Required client ID missing");
  });

  it.each([[{}], [{ type: "token" }], [{ type: "CODE" }]])(
    "400 Request must contain a valid exchange type (%j)",
    async (fields) => {
      const { target, userToken } = await setting();
      await expectFailure(
        await exchange(userToken, { clientId: target.id, ...fields }),
        400,
        "Request must contain a valid exchange type",
      );
    },
  );

  it("400 Type session: Missing redirect URI", async () => {
    const { target, userToken } = await setting();
    await expectFailure(
      await exchange(userToken, { clientId: target.id, type: "session" }),
      400,
      "Type session: Missing redirect URI",
    );
  });

  it("400 Type code: Client to exchange token with is missing a default redirect", async () => {
    const { userToken } = await setting();
    const noDefault = await newClient({ defaultRedirectUri: null });
    await expectFailure(
      await exchange(userToken, { clientId: noDefault.id, type: "code" }),
      400,
      "Type code: Client to exchange token with is missing a default redirect",
    );
  });

  it("403 Provided client ID does not belong to the current merchant, also for a client that does not exist", async () => {
    const { userToken } = await setting();
    for (const clientId of [fjordClient.id, "no-such-client-id"]) {
      await expectFailure(
        await exchange(userToken, { clientId, type: "code" }),
        403,
        "Provided client ID does not belong to the current merchant",
      );
    }
  });

  it("refuses a redirect URI not registered for the target client", async () => {
    const { target, userToken } = await setting();
    for (const redirectUri of ["https://evil.example/callback", `${CALLBACK}/`, webClient.redirectUris[0]!]) {
      const res = await exchange(userToken, { clientId: target.id, type: "session", redirectUri });
      expect(res.status).toBe(400);
      expect((await container(res)).error).toMatchObject({ error: "redirect_uri_mismatch" });
    }
  });

  it("refuses a server token with 403", async () => {
    const { target } = await setting();
    const res = await exchange(await serverToken(target), { clientId: target.id, type: "code" });
    expect(res.status).toBe(403);
  });

  it("answers failures at /oauth/exchange in the bare OAuth error format", async () => {
    const { userToken } = await setting();
    const res = await exchange(userToken, { type: "code" }, "/oauth/exchange");
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: "invalid_request",
      error_code: 400,
      type: "OAuthException",
      error_description: "Required client ID missing",
    });
  });
});

describe("grant_type=authorization_code: redeeming an exchange code", () => {
  it("refuses a second redemption, and revokes what the first one issued", async () => {
    const { target, userToken } = await setting();
    const code = await codeFor(userToken, { clientId: target.id, type: "code" });
    const first = (await (await redeem(target, code)).json()) as Record<string, string>;
    await expectInvalidGrant(await redeem(target, code), "already been used");
    await expectGrantEnded(target, first);
  });

  it("lets one of several racing redemptions win; the others are told to retry, and a replay revokes what it got", async () => {
    const { target, userToken } = await setting();
    const code = await codeFor(userToken, { clientId: target.id, type: "code" });
    const results = await Promise.all([1, 2, 3, 4].map(() => redeem(target, code)));
    const [winner, ...others] = results.filter((res) => res.status === 200);
    expect(others).toHaveLength(0);
    const tokens = (await winner!.json()) as Record<string, string>;
    let replayed = false;
    for (const loser of results.filter((res) => res.status !== 200)) {
      // Held by the winner while it writes its tokens: refused without revoking anything.
      if (loser.status === 503) {
        expect(await loser.json()).toMatchObject({ error: "temporarily_unavailable" });
        expect(Number(loser.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
      } else {
        await expectInvalidGrant(loser, "already been used");
        replayed = true;
      }
    }
    if (!replayed) {
      expect((await call("/api/2/me", { headers: bearer(tokens.access_token!) })).status).toBe(200);
      await expectInvalidGrant(await redeem(target, code), "already been used");
    }
    await expectGrantEnded(target, tokens);
  });

  it("does not let another client's replay of a used code revoke what its owner got", async () => {
    const { target, userToken } = await setting();
    const sibling = await newClient();
    const code = await codeFor(userToken, { clientId: target.id, type: "code" });
    const tokens = (await (await redeem(target, code)).json()) as Record<string, string>;
    await expectInvalidGrant(await redeem(sibling, code), "invalid");
    expect((await call("/api/2/me", { headers: bearer(tokens.access_token!) })).status).toBe(200);
  });

  it("never spends a value once its time is up, even where it was checked a moment before", async () => {
    const limiter = rateLimiterFor(env, (await newClient()).id);
    const by = { id: "attempt-1", reserve: false };
    expect(await limiter.redeemOnce("exchange:late", Date.now() - 1, null, by)).toEqual({ outcome: "expired" });
    expect(await limiter.redeemOnce("exchange:in-time", Date.now() + 30_000, null, by)).toEqual({
      outcome: "redeemed",
    });
    expect(
      await limiter.redeemOnce("exchange:in-time", Date.now() + 30_000, null, { id: "attempt-2", reserve: false }),
    ).toEqual({ outcome: "replayed", grant: null });
  });

  it("reads a KV value that is not a code record as an unknown code, never a 500", async () => {
    const { target } = await setting();
    const code = "B".repeat(43);
    const key = `exchange:${await hashSecret(env.DATA_PROTECTION_KEY, code)}`;
    for (const value of ["{not json", JSON.stringify({ type: "code", clientId: target.id, userId: 1 })]) {
      await env.CODES.put(key, value);
      await expectInvalidGrant(await redeem(target, code), "invalid");
    }
  });

  it("redeems a code 29 seconds old and refuses one 30 seconds old (a controlled clock)", async () => {
    const { target, userToken } = await setting();
    const created = Date.now();
    vi.useFakeTimers({ toFake: ["Date"], now: created });
    const young = await codeFor(userToken, { clientId: target.id, type: "code" });
    const old = await codeFor(userToken, { clientId: target.id, type: "code" });
    vi.setSystemTime(created + 29_000);
    expect((await redeem(target, young)).status).toBe(200);
    vi.setSystemTime(created + 30_000);
    await expectInvalidGrant(await redeem(target, old), "expired");
  });

  it("refuses another client's code, without spending it", async () => {
    const { target, userToken } = await setting();
    const sibling = await newClient();
    const code = await codeFor(userToken, { clientId: target.id, type: "code" });
    await expectInvalidGrant(await redeem(sibling, code), "invalid");
    expect((await redeem(target, code)).status).toBe(200);
  });

  it("refuses a redirect URI other than the bound one", async () => {
    const { target, userToken } = await setting();
    const code = await codeFor(userToken, { clientId: target.id, type: "code" });
    await expectInvalidGrant(await redeem(target, code, OTHER_CALLBACK), "redirect URI");
    const res = await postForm(
      "/oauth/token",
      { grant_type: "authorization_code", code },
      basicAuth(target.id, target.secret),
    );
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: "invalid_request" });
  });

  it("refuses an unknown code and a missing one", async () => {
    const { target } = await setting();
    await expectInvalidGrant(await redeem(target, "A".repeat(43)), "invalid");
    const res = await postForm(
      "/oauth/token",
      { grant_type: "authorization_code", redirect_uri: CALLBACK },
      basicAuth(target.id, target.secret),
    );
    expect(await res.json()).toMatchObject({ error: "invalid_request" });
  });

  it("refuses a user who was blocked after the code was made", async () => {
    const { target, user, userToken } = await setting();
    const code = await codeFor(userToken, { clientId: target.id, type: "code" });
    await createUser(Number(user.row.userId), { ...user.row, status: -2 });
    await expectInvalidGrant(await redeem(target, code), "blocked");
  });

  it("is refused to a client not allowed the grant", async () => {
    const { userToken } = await setting();
    const target = await newClient({ grantTypes: ["password"] });
    const res = await redeem(target, await codeFor(userToken, { clientId: target.id, type: "code" }));
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: "unauthorized_client" });
  });
});
