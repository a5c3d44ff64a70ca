/**
 * Persistent refresh tokens (docs/oauth.md "Persistent refresh tokens"): a confidential client
 * with `refreshTokenRotation: false` gets refresh tokens that are not rotated and are checked
 * without D1, by their MAC and their grant's end in the client's Durable Object. Through
 * /oauth/token, /oauth/revoke, /oauth/introspect and the management API, on real local D1 and
 * Durable Objects.
 */
import { createScheduledController } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { and, eq, ne } from "drizzle-orm";
import { base64url, decodeJwt } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../src/db/client";
import { revokeUserRefreshTokens } from "../src/db/queries/refresh-tokens";
import { refreshTokens } from "../src/db/schema";
import worker from "../src/index";
import { SIGN_OUT_CRON } from "../src/jobs/status-sign-outs";
import { selfContainedRefreshToken } from "../src/oauth/self-contained-refresh-tokens";
import { faultyEnv, fetchWith } from "./helpers/faults";
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
import { createClient, createUser, importData } from "./helpers/seed";

const CALLBACK = "https://test.example/callback";
const DAYS_30 = 30 * 24 * 3600;
let nextUser = 1_400_000 + Math.floor(Math.random() * 50) * 100;

type Client = { id: string; secret: string; redirectUris: string[] };
let client: Client;
let admin: string;

/** A confidential client whose users sign in with a password and whose refresh tokens are persistent. */
async function persistentClient(overrides: Record<string, unknown> = {}): Promise<Client> {
  const created = await createClient({
    grantTypes: ["client_credentials", "password", "refresh_token"],
    refreshTokenRotation: false,
    ...overrides,
  });
  return { ...created, redirectUris: [CALLBACK] };
}

beforeAll(async () => {
  client = await persistentClient();
  admin = await serverToken(await createClient({ admin: true }));
});

async function signedIn(at: Client = client, scope?: string) {
  const userId = nextUser++;
  const user = await createUser(userId, { clients: [at.id], emailVerified: "2024-01-02 00:00:00" });
  const tokens = await userTokenResponse(user, at, scope);
  return { userId, user, access: tokens.access_token, refresh: String(tokens.refresh_token), tokens };
}

const refresh = (token: string, by: { id: string; secret: string } = client, extra: Record<string, string> = {}) =>
  postForm(
    "/oauth/token",
    { grant_type: "refresh_token", refresh_token: token, ...extra },
    basicAuth(by.id, by.secret),
  );

async function refreshed(token: string, by: { id: string; secret: string } = client) {
  const res = await refresh(token, by);
  expect(res.status).toBe(200);
  return (await res.json()) as { access_token: string; refresh_token: string; scope: string; id_token?: string };
}

/** The payload a persistent token carries (its second part). */
function payloadOf(token: string): Record<string, unknown> {
  return JSON.parse(new TextDecoder().decode(base64url.decode(token.split(".")[1]!))) as Record<string, unknown>;
}

const me = (access: string) => call("/api/2/me", { headers: bearer(access) });

describe("persistent refresh tokens", () => {
  it("are not rotated: each refresh answers a new token, and the ones presented before still work", async () => {
    const { refresh: first } = await signedIn();
    expect(first.split(".")).toHaveLength(4);
    const second = await refreshed(first);
    expect((await me(second.access_token)).status).toBe(200);
    // Presented again, the first token is no reuse: it answers, and the grant lives on.
    const again = await refreshed(first);
    expect((await me(again.access_token)).status).toBe(200);
    await refreshed(second.refresh_token);
  });

  it("read and write no D1 row: one call to the client's Durable Object", async () => {
    const { refresh: token } = await signedIn();
    await refreshed(token); // the client's record is cached from here on
    const res = await refresh(token);
    expect(res.status).toBe(200);
    const timing = res.headers.get("Server-Timing") ?? "";
    expect(timing).toMatch(/d1;dur=[\d.]+;desc="0 queries, 0 rows read, 0 written"/);
    expect(timing).toMatch(/do;dur=[\d.]+;desc="1 call"/);
  });

  it("keep a new token valid 30 days from its refresh, never past the grant's end a year after the sign-in", async () => {
    const { refresh: token } = await signedIn();
    const first = payloadOf(token);
    expect(first.e).toBe((first.i as number) + DAYS_30);
    expect(first.x).toBe((first.i as number) + 365 * 24 * 3600);
    const next = payloadOf((await refreshed(token)).refresh_token);
    expect(next.e).toBe((next.i as number) + DAYS_30);
    expect(next.x).toBe(first.x);

    const now = Math.floor(Date.now() / 1000);
    const ending = await madeToken(client.id, (await signedIn()).userId, {
      issued: now - 10,
      expires: now + 60,
      endsBy: now + 60,
    });
    expect(payloadOf((await refreshed(ending)).refresh_token).e).toBe(now + 60);
  });

  it("refuse a token past its expiry", async () => {
    const now = Math.floor(Date.now() / 1000);
    const expired = await madeToken(client.id, (await signedIn()).userId, {
      issued: now - DAYS_30 - 1,
      expires: now - 1,
      endsBy: now + DAYS_30,
    });
    await expectOAuthError(await refresh(expired), "invalid_grant", "The refresh token has expired");
  });

  it("refuse another client's token without ending its grant, and any token altered", async () => {
    const { refresh: token } = await signedIn();
    const other = await persistentClient();
    await expectOAuthError(await refresh(token, other), "invalid_grant", "The refresh token is invalid");
    await refreshed(token);

    const [locator, payload, ...mac] = token.split(".");
    const widened = base64url.encode(JSON.stringify({ ...payloadOf(token), s: "openid profile admin" }));
    await expectOAuthError(
      await refresh([locator, widened, ...mac].join(".")),
      "invalid_grant",
      "The refresh token is invalid",
    );
    const forged = [locator, payload, mac[0], base64url.encode(new Uint8Array(32))].join(".");
    await expectOAuthError(await refresh(forged), "invalid_grant", "The refresh token is invalid");
    // Four parts of anything: a payload that is no JSON, no base64url, or no grant is refused, never a 500.
    const notJson = base64url.encode("not json");
    for (const garbage of [`${locator}.${notJson}.${mac.join(".")}`, `${locator}.!!.${mac.join(".")}`, "a.b.c.d"]) {
      await expectOAuthError(await refresh(garbage), "invalid_grant");
    }
    // Under a key this deployment does not hold.
    const elsewhere = await selfContainedRefreshToken(
      { ...env, DATA_PROTECTION_KEY: base64url.encode(crypto.getRandomValues(new Uint8Array(32))) },
      client.id,
      { locator: locator!, ...grantOf(token) },
    );
    await expectOAuthError(await refresh(elsewhere), "invalid_grant", "The refresh token is invalid");
  });

  it("answer a narrower scope when asked, and refuse a wider one", async () => {
    const at = await persistentClient({ scope: "openid email profile" });
    const { refresh: token } = await signedIn(at, "openid email");
    const narrower = await refresh(token, at, { scope: "email" });
    expect(((await narrower.json()) as { scope: string }).scope).toBe("email");
    await expectOAuthError(await refresh(token, at, { scope: "openid email profile" }), "invalid_scope");
  });

  it("answer an ID token for a grant with openid, of the same user and sign-in", async () => {
    const at = await persistentClient({ autoApprove: true });
    const { refresh: token, tokens, user } = await signedIn(at, "openid email");
    const first = decodeJwt(String(tokens.id_token));
    const next = await refreshed(token, at);
    const claims = decodeJwt(next.id_token!);
    expect(claims).toMatchObject({ sub: user.row.uuid, auth_time: first.auth_time, amr: ["pwd"] });
    expect(claims).not.toHaveProperty("nonce");
  });
});

describe("a persistent grant ends at once", () => {
  it("when its client revokes the refresh token: refreshes and its access tokens are refused", async () => {
    const { refresh: token, access } = await signedIn();
    const later = await refreshed(token);
    const revoked = await postForm("/oauth/revoke", { token }, basicAuth(client.id, client.secret));
    expect(revoked.status).toBe(200);
    await expectOAuthError(await refresh(token), "invalid_grant", "The refresh token has been used or revoked");
    await expectOAuthError(await refresh(later.refresh_token), "invalid_grant");
    expect((await me(access)).status).toBe(401);
    expect((await me(later.access_token)).status).toBe(401);
  });

  it("when the management API blocks the user, and stays ended once the user is let in again", async () => {
    const { refresh: token, userId } = await signedIn();
    const setStatus = (status: string) =>
      call(`/api/2/user/${userId}/status`, {
        method: "POST",
        headers: { ...bearer(admin), "Content-Type": "application/x-www-form-urlencoded" },
        body: `status=${status}`,
      });
    expect((await setStatus("blocked")).status).toBe(200);
    await expectOAuthError(await refresh(token), "invalid_grant");
    expect((await setStatus("active")).status).toBe(200);
    await expectOAuthError(await refresh(token), "invalid_grant");
  });

  it("when the user is signed out everywhere, and within a run of the sign-out job when an import blocks them", async () => {
    const signedOut = await signedIn();
    const later = await refreshed(signedOut.refresh);
    const res = await call(`/api/2/user/${signedOut.userId}/logout`, { method: "POST", headers: bearer(admin) });
    expect((await container(res)).data).toMatchObject({ grants: 1 });
    await expectOAuthError(await refresh(signedOut.refresh), "invalid_grant");
    // An access token from a refresh after the sign-in is found and ended too.
    expect((await me(later.access_token)).status).toBe(401);

    const imported = await signedIn();
    await importData({ users: [{ ...imported.user.row, status: -2 }] });
    await worker.scheduled(createScheduledController({ scheduledTime: Date.now(), cron: SIGN_OUT_CRON }), env);
    await importData({ users: [{ ...imported.user.row, status: 1 }] });
    await expectOAuthError(await refresh(imported.refresh), "invalid_grant");
  });
});

describe("a persistent grant started by a sign-in racing a sign-out", () => {
  /**
   * A grant as a sign-in writes it when it checked the user a moment before the sign-out read the
   * user's grants, and wrote it after: in D1 and in its token, unknown to that sign-out.
   */
  async function racingGrant(userId: number) {
    const now = Math.floor(Date.now() / 1000);
    const locator = crypto.randomUUID().replaceAll("-", "").slice(0, 22);
    const family = crypto.randomUUID();
    await openDatabase(env.DB)
      .insert(refreshTokens)
      .values({
        tokenHash: `pt:${locator}`,
        clientId: client.id,
        userId,
        family,
        created: now,
        expires: now + 365 * 24 * 3600,
        scope: "",
      });
    const grant = {
      locator,
      family,
      userId,
      scope: "",
      issued: now,
      expires: now + DAYS_30,
      endsBy: now + 365 * 24 * 3600,
    };
    return { family, token: await selfContainedRefreshToken(env, client.id, grant) };
  }

  it("is never ended in D1 alone, where its tokens would not see it: a later sign-out finds it live and ends it", async () => {
    const { userId, refresh: listed } = await signedIn();
    const db = openDatabase(env.DB);
    const racing = await racingGrant(userId);
    // The sign-out's own write, with only the grant it read listed: the racing one is left alone.
    const [listedFamily] = (
      await db
        .select({ family: refreshTokens.family })
        .from(refreshTokens)
        .where(and(eq(refreshTokens.userId, userId), ne(refreshTokens.family, racing.family)))
        .all()
    ).map((row) => row.family);
    await db.batch([revokeUserRefreshTokens(db, userId, null, Math.floor(Date.now() / 1000), [listedFamily!])]);
    const rows = await db
      .select({ family: refreshTokens.family, revoked: refreshTokens.revoked })
      .from(refreshTokens)
      .where(eq(refreshTokens.userId, userId))
      .all();
    expect(rows.find((row) => row.family === racing.family)?.revoked).toBeNull();
    expect(rows.find((row) => row.family === listedFamily)?.revoked).toEqual(expect.any(Number));

    const res = await call(`/api/2/user/${userId}/logout`, { method: "POST", headers: bearer(admin) });
    expect(res.status).toBe(200);
    await expectOAuthError(await refresh(racing.token), "invalid_grant");
    // The grant revoked in D1 above is found by the sign-out too, and ended where its tokens look.
    await expectOAuthError(await refresh(listed), "invalid_grant");
  });

  it("is ended at the sign-out job's next run when the user was blocked or erased", async () => {
    for (const end of ["block", "erase"] as const) {
      const { userId } = await signedIn();
      const res =
        end === "block"
          ? await call(`/api/2/user/${userId}/status`, {
              method: "POST",
              headers: { ...bearer(admin), "Content-Type": "application/x-www-form-urlencoded" },
              body: "status=blocked",
            })
          : await call(`/api/2/user/${userId}`, { method: "DELETE", headers: bearer(admin) });
      expect(res.status).toBe(200);
      const racing = await racingGrant(userId);
      // Until the run, about a minute: the one delay a persistent grant has (docs/oauth.md).
      await refreshed(racing.token);
      await worker.scheduled(createScheduledController({ scheduledTime: Date.now(), cron: SIGN_OUT_CRON }), env);
      await expectOAuthError(
        await refresh(racing.token),
        "invalid_grant",
        "The refresh token has been used or revoked",
      );
    }
  });
});

describe("persistent refresh tokens and the platform", () => {
  it("answer 503 when the Durable Object cannot say whether the grant ended, and the token works after", async () => {
    const { refresh: token } = await signedIn();
    const { env: faulty } = faultyEnv({ RATE_LIMITER: { kind: "outage" } });
    const res = await fetchWith(faulty, "/oauth/token", {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", ...basicAuth(client.id, client.secret) },
      body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: token }),
    });
    expect(res.status).toBe(503);
    expect(res.headers.get("Retry-After")).toBe("1");
    expect(await res.json()).toMatchObject({ error: "temporarily_unavailable" });
    await refreshed(token);
  });
});

describe("introspection of a persistent refresh token", () => {
  const introspect = (token: string) =>
    postForm("/oauth/introspect", { token }, basicAuth(client.id, client.secret)).then(
      (res) => res.json() as Promise<Record<string, unknown>>,
    );

  it("describes a live one, and says active: false once its grant has ended or to another client", async () => {
    const { refresh: token, userId } = await signedIn();
    const payload = payloadOf(token);
    expect(await introspect(token)).toMatchObject({
      active: true,
      client_id: client.id,
      sub: String(userId),
      exp: payload.e,
      iat: payload.i,
      token_use: "refresh",
    });
    const other = await persistentClient();
    const theirs = await postForm("/oauth/introspect", { token }, basicAuth(other.id, other.secret));
    expect(await theirs.json()).toEqual({ active: false });
    await postForm("/oauth/revoke", { token }, basicAuth(client.id, client.secret));
    expect(await introspect(token)).toEqual({ active: false });
  });
});

describe("the refreshTokenRotation setting", () => {
  it("is no use to a public client, even with a token made for it (a client made public since)", async () => {
    const app = await createClient({
      public: true,
      secret: undefined,
      grantTypes: ["authorization_code", "refresh_token"],
    });
    const token = await madeToken(app.id, (await signedIn()).userId);
    const res = await postForm("/oauth/token", {
      grant_type: "refresh_token",
      refresh_token: token,
      client_id: app.id,
    });
    await expectOAuthError(res, "invalid_grant", "The refresh token is invalid");
  });

  it("is refused to a public client, by the management API and by the import", async () => {
    const res = await call("/api/2/client", {
      method: "POST",
      headers: { ...bearer(admin), "Content-Type": "application/json" },
      body: JSON.stringify({
        name: "An app",
        public: true,
        redirectUris: [CALLBACK],
        grantTypes: ["authorization_code", "refresh_token"],
        refreshTokenRotation: false,
      }),
    });
    expect(res.status).toBe(400);
    expect((await container(res)).error?.error_description).toMatch(
      /refreshTokenRotation: a public client's refresh tokens are rotated/,
    );
    await expect(createClient({ public: true, secret: undefined, refreshTokenRotation: false })).rejects.toThrow(
      /refresh tokens are rotated/,
    );
  });

  it("follows the token, not the client's setting: a grant keeps the kind it started with", async () => {
    // A persistent grant goes on without rotation at a client that rotates (one that chose
    // rotation since the grant started).
    const rotatingClient = {
      ...(await createClient({ grantTypes: ["password", "refresh_token"] })),
      redirectUris: [CALLBACK],
    };
    const { refresh: rotating, userId } = await signedIn(rotatingClient);
    expect(rotating.split(".")).toHaveLength(5);
    const persistent = await madeToken(rotatingClient.id, userId);
    await refreshed(persistent, rotatingClient);
    await refreshed(persistent, rotatingClient);
  });
});

/**
 * A persistent token made here for `clientId`'s grant of `userId` (a grant of no row: its token
 * alone), valid 30 days from now unless `times` say otherwise.
 */
function madeToken(
  clientId: string,
  userId: number,
  times: { issued: number; expires: number; endsBy: number } | null = null,
) {
  const now = Math.floor(Date.now() / 1000);
  const { issued, expires, endsBy } = times ?? { issued: now, expires: now + DAYS_30, endsBy: now + DAYS_30 };
  const locator = crypto.randomUUID().replaceAll("-", "").slice(0, 22);
  return selfContainedRefreshToken(env, clientId, {
    locator,
    family: crypto.randomUUID(),
    userId,
    scope: "",
    issued,
    expires,
    endsBy,
  });
}

/** A token's grant, as the module takes it, from its payload. */
function grantOf(token: string) {
  const p = payloadOf(token);
  return {
    family: p.f as string,
    userId: p.u as number,
    scope: p.s as string,
    issued: p.i as number,
    expires: p.e as number,
    endsBy: p.x as number,
  };
}
