/**
 * One-time values under a fault of each storage call of the flows that spend them: an exchange
 * code at the token endpoint (grant_type=authorization_code) and at the webview entry, an
 * assertion's jti (jwt-bearer), and token exchange beside them. Each call fails before and after
 * it did its work, once (what the platform layer retries) or for good (a 503): whatever the first
 * answer, the client's retry succeeds and what it is given works, and a replay of the code is
 * still refused and still revokes what its redemption started.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { SignJWT } from "jose";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { openDatabase } from "../../src/db/client";
import { sessions } from "../../src/db/schema";
import { RateLimiter, rateLimiterFor } from "../../src/durable-objects/rate-limiter";
import { RESERVATION_HOLD_MS } from "../../src/durable-objects/redemptions";
import { CALL_DEADLINE_MS } from "../../src/platform/calls";
import type { Bindings } from "../../src/env";
import { keyRing, protectSecret } from "../../src/security/data-protection";
import { type BindingName, type Fault, faultyEnv, fetchWith, platformErrors } from "../helpers/faults";
import {
  BASE,
  basicAuth,
  bearer,
  call,
  container,
  expectOAuthError,
  postForm,
  userTokenResponse,
} from "../helpers/http";
import { createClient, createUser } from "../helpers/seed";

const CALLBACK = "https://test.example/callback";
const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
const SIGNING_SECRET = "a signing secret of the target client";
let nextUser = 14_000 + Math.floor(Math.random() * 50) * 20;

/** One storage call of a flow, in the order the flow makes them: the `n`th call to `binding`. */
type StorageCall = { binding: BindingName; n: number; what: string; write?: true };

/** Errors the layer gives up on at once: the platform is overloaded, and repeating adds to it. */
const GIVEN_UP = {
  DB: () => new Error("D1_ERROR: D1 DB is overloaded. Too many requests queued."),
  RATE_LIMITER: platformErrors.doOverloaded,
};

/**
 * The call `step` failed once (the platform's transient error, which the layer retries unless the call
 * is a D1 write) or for good. KV names no overload: a KV call is given up once its retries fail too.
 */
function faultOf(step: StorageCall, applied: boolean, givenUp: boolean): Fault {
  if (!givenUp) return { kind: "nth", n: step.n, applied };
  if (step.binding === "DB" || step.binding === "RATE_LIMITER") {
    return { kind: "nth", n: step.n, applied, error: GIVEN_UP[step.binding] };
  }
  return { kind: "outage" };
}

/** Every call failed before and after it was applied, once and for good (KV: for good only before). */
function casesOf(calls: readonly StorageCall[]) {
  return calls.flatMap((step) =>
    [false, true].flatMap((applied) =>
      [false, true]
        .filter((givenUp) => !(givenUp && applied && step.binding === "CODES"))
        .map((givenUp) => ({
          name: `${step.what}, ${applied ? "after" : "before"} it was applied, ${givenUp ? "for good" : "once"}`,
          at: step,
          fault: faultOf(step, applied, givenUp),
          // The layer retries a lost call unless it is a D1 write or the platform is overloaded.
          answered: !givenUp && !step.write,
        })),
    ),
  );
}

/** The session cookie a response sets, if any. */
function sessionCookieOf(res: Response): string | undefined {
  return res.headers.getSetCookie().find((cookie) => /^(__Host-)?session=/.test(cookie));
}

/**
 * `env`, its RateLimiter running `first` before the first commit made through it: a redemption
 * that something holds up between writing what it starts and committing it.
 */
function delayedCommit(first: () => Promise<void>): Bindings {
  let before: (() => Promise<void>) | undefined = first;
  const delayed = <Stub extends object>(stub: Stub): Stub =>
    new Proxy(stub, {
      get(target, name) {
        const member: unknown = Reflect.get(target, name);
        if (typeof member !== "function" || typeof name !== "string" || name === "then") return member;
        return async (...args: unknown[]) => {
          if (name === "commitRedemption") {
            const run = before;
            before = undefined;
            // Once the platform layer has set the call's deadline: the time `first` takes is the
            // request's, not the call's.
            await Promise.resolve();
            await run?.();
          }
          return Reflect.apply(member, target, args) as unknown;
        };
      },
    });
  const RATE_LIMITER = new Proxy(env.RATE_LIMITER, {
    get(target, name) {
      const member: unknown = Reflect.get(target, name);
      if (typeof member !== "function") return member;
      if (name !== "get") return member.bind(target);
      return (...args: unknown[]) => delayed(Reflect.apply(member, target, args) as object);
    },
  });
  return { ...env, RATE_LIMITER };
}

async function expectUnavailable(res: Response) {
  expect(res.status).toBe(503);
  expect(Number(res.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
  await res.body?.cancel();
}

type Client = { id: string; secret: string };

function form(client: Client, fields: Record<string, string>): RequestInit {
  return {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", ...basicAuth(client.id, client.secret) },
    body: new URLSearchParams(fields),
  };
}

/** A user signed in at an issuing client, and a target client of the same merchant that redeems. */
async function setting() {
  const issuer = await createClient({ grantTypes: ["password"], autoApprove: true, redirectUris: [CALLBACK] });
  const target = await createClient({
    grantTypes: ["authorization_code", "refresh_token", JWT_BEARER, TOKEN_EXCHANGE],
    autoApprove: true,
    redirectUris: [CALLBACK],
    defaultRedirectUri: CALLBACK,
    signingSecret: SIGNING_SECRET,
  });
  const user = await createUser(nextUser++, { clients: [issuer.id, target.id] });
  const { access_token: userToken } = await userTokenResponse(user, { ...issuer, redirectUris: [CALLBACK] });
  // The target authenticated once, as a client's back end has: its record is cached as it would be.
  await (
    await postForm("/oauth/token", { grant_type: "client_credentials" }, basicAuth(target.id, target.secret))
  ).body?.cancel();
  return { target, user, userToken };
}

async function exchangeCode(userToken: string, fields: Record<string, string>): Promise<string> {
  const res = await postForm("/api/2/oauth/exchange", fields, bearer(userToken));
  expect(res.status).toBe(200);
  return (await container(res)).data.code as string;
}

type Tokens = { access_token: string; refresh_token: string };

/** The tokens work: the access token on the API, the refresh token once; the newest are answered. */
async function expectWorking(client: Client, tokens: Tokens): Promise<Tokens> {
  const me = await call("/api/2/me", { headers: bearer(tokens.access_token) });
  expect(me.status).toBe(200);
  await me.body?.cancel();
  const refreshed = await postForm(
    "/oauth/token",
    { grant_type: "refresh_token", refresh_token: tokens.refresh_token },
    basicAuth(client.id, client.secret),
  );
  expect(refreshed.status).toBe(200);
  return (await refreshed.json()) as Tokens;
}

const redeemCode = (target: Client, code: string) =>
  form(target, { grant_type: "authorization_code", code, redirect_uri: CALLBACK });

/** The code is spent: redeemed again, it is refused, and what it was redeemed for ends. */
async function expectReplayEnds(client: Client, code: string, tokens: Tokens) {
  await expectOAuthError(
    await fetchWith(env, "/oauth/token", redeemCode(client, code)),
    "invalid_grant",
    "already been used",
  );
  await expectEnded(client, tokens);
}

/** The grant ended: its access token revoked, its refresh token refused. */
async function expectEnded(client: Client, tokens: Tokens) {
  const me = await call("/api/2/me", { headers: bearer(tokens.access_token) });
  expect(me.status).toBe(401);
  await me.body?.cancel();
  const refreshed = await postForm(
    "/oauth/token",
    { grant_type: "refresh_token", refresh_token: tokens.refresh_token },
    basicAuth(client.id, client.secret),
  );
  await expectOAuthError(refreshed, "invalid_grant");
}

let log: ReturnType<typeof vi.spyOn>;
beforeAll(() => {
  // Each fault given up is logged once; the layer's log is tested in test/platform-layer.test.ts.
  log = vi.spyOn(console, "error").mockImplementation(() => {});
});
afterAll(() => log.mockRestore());
afterEach(() => vi.useRealTimers());

describe("grant_type=authorization_code under a storage fault", () => {
  const CALLS: StorageCall[] = [
    { binding: "CODES", n: 1, what: "the code's read" },
    { binding: "RATE_LIMITER", n: 1, what: "its reservation" },
    { binding: "DB", n: 1, what: "the user's read" },
    { binding: "DB", n: 2, what: "the tokens' batch", write: true },
    { binding: "RATE_LIMITER", n: 2, what: "its commit" },
  ];

  it("makes the calls these cases fail, and no others", async () => {
    const { target, userToken } = await setting();
    const code = await exchangeCode(userToken, { clientId: target.id, type: "code" });
    const { env: clean, counts } = faultyEnv({});
    expect((await fetchWith(clean, "/oauth/token", redeemCode(target, code))).status).toBe(200);
    for (const binding of ["CODES", "RATE_LIMITER", "DB", "LINK_REQUESTS"] as const) {
      expect(counts[binding].calls).toBe(CALLS.filter((c) => c.binding === binding).length);
    }
  });

  it.each(casesOf(CALLS))("at $name: the retry succeeds, and a replay revokes", async ({ at, fault, answered }) => {
    const { target, userToken } = await setting();
    const code = await exchangeCode(userToken, { clientId: target.id, type: "code" });
    const faulty = faultyEnv({ [at.binding]: fault });
    let res = await fetchWith(faulty.env, "/oauth/token", redeemCode(target, code));
    expect(faulty.counts[at.binding].failed).toBeGreaterThanOrEqual(1);
    if (!answered) {
      await expectUnavailable(res);
      res = await fetchWith(env, "/oauth/token", redeemCode(target, code));
    }
    expect(res.status).toBe(200);
    const tokens = await expectWorking(target, (await res.json()) as Tokens);
    await expectReplayEnds(target, code, tokens);
  });

  it("stalled at its RateLimiter: 503 within one deadline, and the retry succeeds", { timeout: 15_000 }, async () => {
    const { target, userToken } = await setting();
    const code = await exchangeCode(userToken, { clientId: target.id, type: "code" });
    const stalled = await fetchWith(
      faultyEnv({ RATE_LIMITER: { kind: "stall" } }).env,
      "/oauth/token",
      redeemCode(target, code),
    );
    await expectUnavailable(stalled);
    // The release goes on in the background: the answer waits for the reservation's deadline only.
    expect(stalled.elapsedMs).toBeLessThan(CALL_DEADLINE_MS + 1_000);
    const retried = await fetchWith(env, "/oauth/token", redeemCode(target, code));
    expect(retried.status).toBe(200);
    await expectWorking(target, (await retried.json()) as Tokens);
  });

  it(
    "reserved after its deadline, its release before: held for the hold, then redeemable",
    { timeout: 15_000 },
    async () => {
      const { target, userToken } = await setting();
      const code = await exchangeCode(userToken, { clientId: target.id, type: "code" });
      const late = faultyEnv({ RATE_LIMITER: { kind: "late", n: 1, ms: CALL_DEADLINE_MS + 500 } });
      await expectUnavailable(await fetchWith(late.env, "/oauth/token", redeemCode(target, code)));
      await late.counts.RATE_LIMITER.landed;
      // The reservation landed after the release: it holds the code for an attempt that is gone.
      const start = Date.now();
      vi.useFakeTimers({ toFake: ["Date"], now: start });
      const held = await fetchWith(env, "/oauth/token", redeemCode(target, code));
      expect(held.status).toBe(503);
      const retryAfter = Number(held.headers.get("Retry-After"));
      expect(retryAfter).toBeLessThanOrEqual(RESERVATION_HOLD_MS / 1000);
      vi.setSystemTime(start + retryAfter * 1000);
      const retried = await fetchWith(env, "/oauth/token", redeemCode(target, code));
      expect(retried.status).toBe(200);
      const tokens = await expectWorking(target, (await retried.json()) as Tokens);
      await expectReplayEnds(target, code, tokens);
    },
  );

  it("lost with its release too: the code is held for a few seconds, then redeemable", async () => {
    const start = Date.now();
    vi.useFakeTimers({ toFake: ["Date"], now: start });
    const { target, userToken } = await setting();
    const code = await exchangeCode(userToken, { clientId: target.id, type: "code" });
    const batchLost = faultyEnv({
      DB: { kind: "nth", n: 2, applied: false, error: GIVEN_UP.DB },
      RATE_LIMITER: { kind: "nth", n: 2, applied: false, error: GIVEN_UP.RATE_LIMITER },
    });
    await expectUnavailable(await fetchWith(batchLost.env, "/oauth/token", redeemCode(target, code)));
    expect(batchLost.counts.RATE_LIMITER).toEqual({ calls: 2, failed: 1 });

    // Held: told to come back when the hold lapses, and nothing is revoked.
    const held = await fetchWith(env, "/oauth/token", redeemCode(target, code));
    expect(held.status).toBe(503);
    expect(await held.json()).toMatchObject({ error: "temporarily_unavailable" });
    const retryAfter = Number(held.headers.get("Retry-After"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(RESERVATION_HOLD_MS / 1000);

    vi.setSystemTime(start + retryAfter * 1000);
    const retried = await fetchWith(env, "/oauth/token", redeemCode(target, code));
    expect(retried.status).toBe(200);
    const tokens = await expectWorking(target, (await retried.json()) as Tokens);
    await expectReplayEnds(target, code, tokens);
  });

  it("held up past its hold: its commit is refused, 503, and the retry succeeds", async () => {
    const start = Date.now();
    vi.useFakeTimers({ toFake: ["Date"], now: start });
    const { target, userToken } = await setting();
    const code = await exchangeCode(userToken, { clientId: target.id, type: "code" });
    const slow = delayedCommit(async () => {
      vi.setSystemTime(start + RESERVATION_HOLD_MS);
    });
    await expectUnavailable(await fetchWith(slow, "/oauth/token", redeemCode(target, code)));

    const retried = await fetchWith(env, "/oauth/token", redeemCode(target, code));
    expect(retried.status).toBe(200);
    const tokens = await expectWorking(target, (await retried.json()) as Tokens);
    await expectReplayEnds(target, code, tokens);
  });

  it("held up past its hold and taken over: one answer only, and the first one's retry revokes the taker's grant", async () => {
    const start = Date.now();
    vi.useFakeTimers({ toFake: ["Date"], now: start });
    const { target, userToken } = await setting();
    const code = await exchangeCode(userToken, { clientId: target.id, type: "code" });
    let taker: Response | undefined;
    const slow = delayedCommit(async () => {
      vi.setSystemTime(start + RESERVATION_HOLD_MS);
      taker = await fetchWith(env, "/oauth/token", redeemCode(target, code));
    });
    await expectUnavailable(await fetchWith(slow, "/oauth/token", redeemCode(target, code)));
    expect(taker?.status).toBe(200);
    const takers = await expectWorking(target, (await taker!.json()) as Tokens);

    await expectReplayEnds(target, code, takers);
  });
});

describe("GET /oauth/webview under a storage fault", () => {
  const CALLS: StorageCall[] = [
    { binding: "CODES", n: 1, what: "the code's read" },
    { binding: "RATE_LIMITER", n: 1, what: "its reservation" },
    { binding: "DB", n: 1, what: "the client's read" },
    { binding: "DB", n: 2, what: "the user's read" },
    { binding: "DB", n: 3, what: "the session's batch", write: true },
    { binding: "RATE_LIMITER", n: 2, what: "its commit" },
  ];

  const open = (faulty: Bindings, code: string) =>
    fetchWith(faulty, `/oauth/webview?code=${encodeURIComponent(code)}`, { redirect: "manual" });

  /** The session the answer's cookie names, as D1 holds it. */
  async function sessionOf(res: Response) {
    const id = /session=([^.;]+)\./.exec(res.headers.get("Set-Cookie") ?? "")?.[1];
    expect(id).toBeDefined();
    const idHash = await protectSecret(keyRing(env), id!);
    return openDatabase(env.DB).select().from(sessions).where(eq(sessions.idHash, idHash)).get();
  }

  it("makes the calls these cases fail, and no others", async () => {
    const { target, userToken } = await setting();
    const code = await exchangeCode(userToken, { clientId: target.id, type: "session", redirectUri: CALLBACK });
    const { env: clean, counts } = faultyEnv({});
    expect((await open(clean, code)).status).toBe(303);
    for (const binding of ["CODES", "RATE_LIMITER", "DB", "LINK_REQUESTS"] as const) {
      expect(counts[binding].calls).toBe(CALLS.filter((c) => c.binding === binding).length);
    }
  });

  it.each(casesOf(CALLS))(
    "at $name: the retry opens a live session, and a replay ends it",
    async ({ at, fault, answered }) => {
      const { target, user, userToken } = await setting();
      const code = await exchangeCode(userToken, { clientId: target.id, type: "session", redirectUri: CALLBACK });
      let res = await open(faultyEnv({ [at.binding]: fault }).env, code);
      if (!answered) {
        // No session rides on the 503: the code is redeemable again, and the retry starts its own.
        expect(sessionCookieOf(res)).toBeUndefined();
        await expectUnavailable(res);
        res = await open(env, code);
      }
      expect(res.status).toBe(303);
      expect(res.headers.get("Location")).toBe(CALLBACK);
      expect(await sessionOf(res)).toMatchObject({ userId: Number(user.row.userId), revoked: null });

      const replay = await open(env, code);
      expect(replay.status).toBe(410);
      await replay.body?.cancel();
      expect((await sessionOf(res))!.revoked).not.toBeNull();
    },
  );

  it("held up past its hold: 503 without a session cookie, and the retry opens a live session", async () => {
    const start = Date.now();
    vi.useFakeTimers({ toFake: ["Date"], now: start });
    const { target, user, userToken } = await setting();
    const code = await exchangeCode(userToken, { clientId: target.id, type: "session", redirectUri: CALLBACK });
    const held = await open(
      delayedCommit(async () => {
        vi.setSystemTime(start + RESERVATION_HOLD_MS);
      }),
      code,
    );
    expect(sessionCookieOf(held)).toBeUndefined();
    await expectUnavailable(held);

    const res = await open(env, code);
    expect(res.status).toBe(303);
    expect(await sessionOf(res)).toMatchObject({ userId: Number(user.row.userId), revoked: null });
  });
});

describe("grant_type=jwt-bearer under a storage fault", () => {
  const CALLS: StorageCall[] = [
    { binding: "DB", n: 1, what: "the connection's read" },
    { binding: "DB", n: 2, what: "the user's read" },
    { binding: "DB", n: 3, what: "the grant's record", write: true },
    { binding: "RATE_LIMITER", n: 1, what: "the jti's redemption" },
  ];

  async function assertionFor(target: Client, userId: string) {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({
      iss: target.id,
      sub: userId,
      aud: `${BASE}/oauth/token`,
      exp: now + 120,
      jti: crypto.randomUUID(),
    })
      .setProtectedHeader({ alg: "HS256" })
      .sign(new TextEncoder().encode(SIGNING_SECRET));
  }

  const redeemAssertion = (target: Client, assertion: string) => form(target, { grant_type: JWT_BEARER, assertion });

  it("makes the calls these cases fail, and no others", async () => {
    const { target, user } = await setting();
    const { env: clean, counts } = faultyEnv({});
    const assertion = await assertionFor(target, user.row.userId);
    expect((await fetchWith(clean, "/oauth/token", redeemAssertion(target, assertion))).status).toBe(200);
    for (const binding of ["CODES", "RATE_LIMITER", "DB", "LINK_REQUESTS"] as const) {
      expect(counts[binding].calls).toBe(CALLS.filter((c) => c.binding === binding).length);
    }
  });

  it.each(casesOf(CALLS))("at $name: the retry succeeds, and a replay is refused", async ({ at, fault, answered }) => {
    const { target, user } = await setting();
    const assertion = await assertionFor(target, user.row.userId);
    let res = await fetchWith(
      faultyEnv({ [at.binding]: fault }).env,
      "/oauth/token",
      redeemAssertion(target, assertion),
    );
    if (!answered) {
      await expectUnavailable(res);
      res = await fetchWith(env, "/oauth/token", redeemAssertion(target, assertion));
    }
    expect(res.status).toBe(200);
    const { access_token } = (await res.json()) as Tokens;
    const me = await call("/api/2/me", { headers: bearer(access_token) });
    expect(me.status).toBe(200);
    await me.body?.cancel();
    await expectOAuthError(
      await fetchWith(env, "/oauth/token", redeemAssertion(target, assertion)),
      "invalid_grant",
      "already been used",
    );
  });
});

describe("token exchange under a storage fault", () => {
  const CALLS: StorageCall[] = [
    { binding: "DB", n: 1, what: "the issuer's read" },
    { binding: "RATE_LIMITER", n: 1, what: "the subject token's revocation check" },
    { binding: "DB", n: 2, what: "the user's read" },
    { binding: "DB", n: 3, what: "the tokens' batch", write: true },
  ];

  const exchange = (target: Client, subjectToken: string) =>
    form(target, {
      grant_type: TOKEN_EXCHANGE,
      subject_token: subjectToken,
      subject_token_type: "urn:ietf:params:oauth:token-type:access_token",
    });

  it("makes the calls these cases fail, and no others", async () => {
    const { target, userToken } = await setting();
    const { env: clean, counts } = faultyEnv({});
    expect((await fetchWith(clean, "/oauth/token", exchange(target, userToken))).status).toBe(200);
    for (const binding of ["CODES", "RATE_LIMITER", "DB", "LINK_REQUESTS"] as const) {
      expect(counts[binding].calls).toBe(CALLS.filter((c) => c.binding === binding).length);
    }
  });

  it.each(casesOf(CALLS))("at $name: the retry succeeds, and both tokens work", async ({ at, fault, answered }) => {
    const { target, userToken } = await setting();
    let res = await fetchWith(faultyEnv({ [at.binding]: fault }).env, "/oauth/token", exchange(target, userToken));
    if (!answered) {
      await expectUnavailable(res);
      res = await fetchWith(env, "/oauth/token", exchange(target, userToken));
    }
    expect(res.status).toBe(200);
    await expectWorking(target, (await res.json()) as Tokens);
    const subject = await call("/api/2/me", { headers: bearer(userToken) });
    expect(subject.status).toBe(200);
    await subject.body?.cancel();
  });
});

describe("a one-time value at the client's RateLimiter", () => {
  const key = () => `exchange:${crypto.randomUUID()}`;
  const soon = () => Date.now() + 30_000;

  it("answers a repeated call of one attempt as it answered the first", async () => {
    const limiter = rateLimiterFor(env, (await createClient()).id);
    const [code, jti] = [key(), `jti:${crypto.randomUUID()}`];
    const by = { id: "attempt-a", reserve: true };
    expect(await limiter.redeemOnce(code, soon(), "grant-a", by)).toEqual({ outcome: "reserved" });
    expect(await limiter.redeemOnce(code, soon(), "grant-a", by)).toEqual({ outcome: "reserved" });
    expect(await limiter.commitRedemption(code, "attempt-a")).toBe(true);
    expect(await limiter.commitRedemption(code, "attempt-a")).toBe(true);
    expect(await limiter.redeemOnce(code, soon(), "grant-b", { id: "attempt-b", reserve: true })).toEqual({
      outcome: "replayed",
      grant: "grant-a",
    });
    const atOnce = { id: "attempt-c", reserve: false };
    expect(await limiter.redeemOnce(jti, soon(), null, atOnce)).toEqual({ outcome: "redeemed" });
    expect(await limiter.redeemOnce(jti, soon(), null, atOnce)).toEqual({ outcome: "redeemed" });
  });

  it("holds a reserved value from other attempts without revoking, until released or its hold lapses", async () => {
    const start = Date.now();
    vi.useFakeTimers({ toFake: ["Date"], now: start });
    const limiter = rateLimiterFor(env, (await createClient()).id);
    const code = key();
    const expiresAt = start + 30_000;
    expect(await limiter.redeemOnce(code, expiresAt, "grant-a", { id: "a", reserve: true })).toEqual({
      outcome: "reserved",
    });
    expect(await limiter.redeemOnce(code, expiresAt, "grant-b", { id: "b", reserve: true })).toEqual({
      outcome: "held",
      retryAfter: RESERVATION_HOLD_MS / 1000,
    });
    // Released (its attempt failed): the next attempt gets it at once.
    await limiter.releaseRedemption(code, "a");
    expect(await limiter.redeemOnce(code, expiresAt, "grant-b", { id: "b", reserve: true })).toEqual({
      outcome: "reserved",
    });
    // Never released: another attempt takes it over once the hold lapses, and the first one's
    // late commit is refused, so that only the taker answers.
    vi.setSystemTime(start + RESERVATION_HOLD_MS);
    expect(await limiter.redeemOnce(code, expiresAt, "grant-c", { id: "c", reserve: true })).toEqual({
      outcome: "reserved",
    });
    expect(await limiter.commitRedemption(code, "b")).toBe(false);
    expect(await limiter.commitRedemption(code, "c")).toBe(true);
    // A spent value let go by its attempt (it failed before it answered) is redeemable again.
    await limiter.releaseRedemption(code, "c");
    expect(await limiter.redeemOnce(code, expiresAt, "grant-d", { id: "d", reserve: false })).toEqual({
      outcome: "redeemed",
    });
    await limiter.releaseRedemption(code, "b");
    expect(await limiter.redeemed(code)).toBe(true);
  });

  it("commits a reservation only while its hold lasts, whether or not another attempt took it over", async () => {
    const start = Date.now();
    vi.useFakeTimers({ toFake: ["Date"], now: start });
    const limiter = rateLimiterFor(env, (await createClient()).id);
    const [late, slow, takenOver] = [key(), key(), key()];
    const reserve = (value: string, id: string, expiresAt = start + 30_000) =>
      limiter.redeemOnce(value, expiresAt, `grant-${id}`, { id, reserve: true });
    await reserve(late, "late", start + 5_000);
    await reserve(slow, "slow");
    await reserve(takenOver, "first");

    // Reserved in time and committed within its hold: spent, though the value expired meanwhile.
    vi.setSystemTime(start + RESERVATION_HOLD_MS - 1);
    expect(await limiter.commitRedemption(late, "late")).toBe(true);
    expect(await reserve(late, "other", start + 5_000)).toEqual({ outcome: "replayed", grant: "grant-late" });

    // Lapsed: the holder may no longer commit, taken over or not, so that only one attempt answers.
    vi.setSystemTime(start + RESERVATION_HOLD_MS);
    expect(await limiter.commitRedemption(slow, "slow")).toBe(false);
    await limiter.releaseRedemption(slow, "slow");
    expect(await reserve(slow, "retry")).toEqual({ outcome: "reserved" });

    expect(await reserve(takenOver, "taker")).toEqual({ outcome: "reserved" });
    expect(await limiter.commitRedemption(takenOver, "first")).toBe(false);
    expect(await limiter.commitRedemption(takenOver, "taker")).toBe(true);
    expect(await limiter.commitRedemption(takenOver, "first")).toBe(false);
    await limiter.releaseRedemption(takenOver, "first");
    // The first attempt's retry is a replay, and revokes the taker's grant.
    expect(await reserve(takenOver, "retry")).toEqual({ outcome: "replayed", grant: "grant-taker" });
  });

  it("is spent at once for a Worker from before attempts (a rolling deploy), which never takes a held value", async () => {
    const limiter = rateLimiterFor(env, (await createClient()).id);
    const [held, spent] = [key(), key()];
    await limiter.redeemOnce(held, soon(), "grant-a", { id: "a", reserve: true });
    expect(await limiter.redeemOnce(held, soon(), "grant-old")).toEqual({ outcome: "replayed", grant: null });
    expect(await limiter.redeemOnce(spent, soon(), "grant-old")).toEqual({ outcome: "redeemed" });
    expect(await limiter.redeemOnce(spent, soon(), "grant-b", { id: "b", reserve: true })).toEqual({
      outcome: "replayed",
      grant: "grant-old",
    });
  });

  it("keeps the values spent before reservations, moved into the table reservations use", async () => {
    const limiter = rateLimiterFor(env, (await createClient()).id);
    const moved = await runInDurableObject(limiter, (_, state) => {
      state.storage.sql.exec(
        "CREATE TABLE redemptions (key TEXT PRIMARY KEY, grant_id TEXT, expires_at INTEGER NOT NULL)",
      );
      state.storage.sql.exec("INSERT INTO redemptions VALUES ('exchange:old', 'grant-old', ?)", Date.now() + 60_000);
      new RateLimiter(state, env);
      return state.storage.sql.exec("SELECT name FROM sqlite_master WHERE name = 'redemptions'").toArray();
    });
    expect(moved).toEqual([]);
    expect(await limiter.redeemed("exchange:old")).toBe(true);
    expect(await limiter.redeemOnce("exchange:old", soon(), null, { id: "new", reserve: true })).toEqual({
      outcome: "replayed",
      grant: "grant-old",
    });
  });
});
