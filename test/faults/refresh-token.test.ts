/**
 * grant_type=refresh_token under a fault of each storage call it makes, before and after the call
 * did its work: whatever the first answer, the client's retry with the refresh token it still
 * holds succeeds, and what it is given goes on working. A rotation whose answer was lost is
 * answered anew within the grace window (src/oauth/refresh-tokens.ts) instead of read as reuse.
 * For both forms of rotated token: one that carries its grant, rotated at the client's Durable
 * Object (src/durable-objects/rotations.ts), and one of the grant-row form, rotated in D1.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { and, eq, like } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { openDatabase } from "../../src/db/client";
import { refreshTokens } from "../../src/db/schema";
import { rateLimiterFor } from "../../src/durable-objects/rate-limiter";
import type { Rotations } from "../../src/durable-objects/rotations";
import { CALL_DEADLINE_MS } from "../../src/platform/calls";
import { keyRing, protectSecret } from "../../src/security/data-protection";
import { type Fault, faultyEnv, fetchWith } from "../helpers/faults";
import { basicAuth, bearer, call, postForm, userTokenResponse } from "../helpers/http";
import { createClient, createUser, rowFormGrant } from "../helpers/seed";

/** A grant-row refresh's storage calls: one D1 statement that rotates the token in place and returns its row. */
const REFRESH_CALLS = [{ n: 1, what: "the rotation" }] as const;

const CALLBACK = "https://test.example/callback";
let nextUser = 12_000 + Math.floor(Math.random() * 50) * 20;

/** A fresh client (its own tokens only) with a user signed in to it: the refresh token it holds. */
async function signedIn() {
  const client = await createClient({ grantTypes: ["password", "refresh_token"], autoApprove: true });
  const user = await createUser(nextUser++, { clients: [client.id] });
  const tokens = await userTokenResponse(user, { ...client, redirectUris: [CALLBACK] });
  return { client, user, refreshToken: tokens.refresh_token as string };
}

/** The same, and a grant of the grant-row form for that user: its refresh token. */
async function signedInWithRowGrant() {
  const { client, user } = await signedIn();
  const { refreshToken } = await rowFormGrant(client.id, Number(user.row.userId));
  return { client, refreshToken };
}

type Client = { id: string; secret: string };

function refreshRequest(client: Client, refreshToken: string): RequestInit {
  return {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", ...basicAuth(client.id, client.secret) },
    body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: refreshToken }),
  };
}

function refresh(client: Client, refreshToken: string) {
  return postForm(
    "/oauth/token",
    { grant_type: "refresh_token", refresh_token: refreshToken },
    basicAuth(client.id, client.secret),
  );
}

type Tokens = { access_token: string; refresh_token: string };

/** The tokens answered: a further refresh works, and so does its access token on the API. */
async function expectWorking(client: Client, tokens: Tokens) {
  const next = await refresh(client, tokens.refresh_token);
  expect(next.status).toBe(200);
  const { access_token } = (await next.json()) as Tokens;
  for (const accessToken of [tokens.access_token, access_token]) {
    const me = await call("/api/2/me", { headers: bearer(accessToken) });
    expect(me.status).toBe(200);
    await me.body?.cancel();
  }
}

/**
 * The client's one grant-row grant: still live, and its current token the one `answered` (a lost
 * rotation leaves no other live behind), or revoked.
 */
async function grantOf(client: Client) {
  const rows = await openDatabase(env.DB)
    .select()
    .from(refreshTokens)
    .where(and(eq(refreshTokens.clientId, client.id), like(refreshTokens.tokenHash, "rt:%")))
    .all();
  expect(rows).toHaveLength(1);
  return rows[0]!;
}

async function expectCurrent(client: Client, answered: string) {
  const grant = await grantOf(client);
  expect(grant.revoked).toBeNull();
  expect(grant.secretHash).toBe(await protectSecret(keyRing(env), answered));
}

let log: ReturnType<typeof vi.spyOn>;
beforeAll(() => {
  // Each fault given up is logged once; the layer's log is tested in test/platform-layer.test.ts.
  log = vi.spyOn(console, "error").mockImplementation(() => {});
});
afterAll(() => log.mockRestore());

describe("a grant-row refresh's storage calls", () => {
  it("are the ones these cases fail, and no others", async () => {
    const { client, refreshToken } = await signedInWithRowGrant();
    const { env: clean, counts } = faultyEnv({});
    const res = await fetchWith(clean, "/oauth/token", refreshRequest(client, refreshToken));
    expect(res.status).toBe(200);
    expect(counts.DB.calls).toBe(REFRESH_CALLS.length);
    expect(counts.CODES.calls + counts.RATE_LIMITER.calls + counts.LINK_REQUESTS.calls).toBe(0);
  });
});

describe("a grant-row refresh whose storage call fails", () => {
  const cases = REFRESH_CALLS.flatMap(({ n, what }) =>
    [false, true].map((applied) => [what, applied ? "after" : "before", { n, applied }] as const),
  );

  it.each(cases)(
    "at %s, %s it was applied: a 503, then the retry succeeds and its tokens work",
    async (_, __, fault) => {
      const { client, refreshToken } = await signedInWithRowGrant();
      const { env: faulty, counts } = faultyEnv({ DB: { kind: "nth", n: fault.n, applied: fault.applied } });
      const first = await fetchWith(faulty, "/oauth/token", refreshRequest(client, refreshToken));
      expect(counts.DB.failed).toBe(1);
      expect(first.status).toBe(503);
      expect(Number(first.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
      expect(await first.json()).toMatchObject({ error: "temporarily_unavailable" });
      // The client never saw the answer: it retries with the token it holds.
      const retry = await refresh(client, refreshToken);
      expect(retry.status).toBe(200);
      const tokens = (await retry.json()) as Tokens;
      expect(tokens.refresh_token).not.toBe(refreshToken);
      await expectCurrent(client, tokens.refresh_token);
      await expectWorking(client, tokens);
    },
  );

  it("lost twice, the rotation and then its retry, still succeeds on the third try", async () => {
    const { client, refreshToken } = await signedInWithRowGrant();
    // The rotation (the first call), then the retry's replacement in the grace window (its third:
    // the rotation that finds the token replaced, the row's read, the replacement), each applied
    // and its answer lost.
    for (const n of [1, 3]) {
      const { env: faulty, counts } = faultyEnv({ DB: { kind: "nth", n, applied: true } });
      const lost = await fetchWith(faulty, "/oauth/token", refreshRequest(client, refreshToken));
      expect(counts.DB.failed).toBe(1);
      expect(lost.status).toBe(503);
      await lost.body?.cancel();
    }
    const third = await refresh(client, refreshToken);
    expect(third.status).toBe(200);
    const tokens = (await third.json()) as Tokens;
    await expectCurrent(client, tokens.refresh_token);
    await expectWorking(client, tokens);
  });
});

describe("a grant-row refresh, the rotation landing after its deadline", () => {
  /** The rotation stalls past the 3 s deadline, then is applied after all. */
  const lateRotation: Fault = { kind: "late", n: 1, ms: CALL_DEADLINE_MS + 500 };

  it("retried after it landed: the retry is answered within the grace window", { timeout: 15_000 }, async () => {
    const { client, refreshToken } = await signedInWithRowGrant();
    const { env: faulty, counts } = faultyEnv({ DB: lateRotation });
    const first = await fetchWith(faulty, "/oauth/token", refreshRequest(client, refreshToken));
    expect(first.status).toBe(503);
    await first.body?.cancel();
    await counts.DB.landed;
    const retry = await refresh(client, refreshToken);
    expect(retry.status).toBe(200);
    const tokens = (await retry.json()) as Tokens;
    await expectCurrent(client, tokens.refresh_token);
    await expectWorking(client, tokens);
  });

  it(
    "retried before it landed: the late rotation leaves nothing behind, and reuse is still found",
    { timeout: 15_000 },
    async () => {
      const { client, refreshToken } = await signedInWithRowGrant();
      const { env: faulty, counts } = faultyEnv({ DB: lateRotation });
      const first = await fetchWith(faulty, "/oauth/token", refreshRequest(client, refreshToken));
      expect(first.status).toBe(503);
      await first.body?.cancel();
      const retry = await refresh(client, refreshToken);
      expect(retry.status).toBe(200);
      const tokens = (await retry.json()) as Tokens;
      // The retry's successor is used before the late rotation lands.
      const next = await refresh(client, tokens.refresh_token);
      expect(next.status).toBe(200);
      const latest = (await next.json()) as Tokens;
      await counts.DB.landed;
      // The late rotation found the token rotated already and changed nothing: the current token
      // is the client's, and the rotated token presented again is reuse, which ends the grant.
      await expectCurrent(client, latest.refresh_token);
      const replayed = await refresh(client, refreshToken);
      expect(replayed.status).toBe(400);
      expect(await replayed.json()).toMatchObject({ error: "invalid_grant" });
      expect((await grantOf(client)).revoked).not.toBeNull();
    },
  );
});

describe("a refresh of a token that carries its grant", () => {
  const introspect = async (client: Client, token: string) => {
    const res = await postForm("/oauth/introspect", { token }, basicAuth(client.id, client.secret));
    return (await res.json()) as { active: boolean };
  };
  /** Only `answered` of the client's refresh tokens is live: a lost rotation leaves no other behind. */
  async function expectOnlyLive(client: Client, answered: string, others: string[]) {
    expect(await introspect(client, answered)).toMatchObject({ active: true });
    for (const token of others) expect(await introspect(client, token)).toEqual({ active: false });
  }
  const rotation = (fault: Fault): Fault => ({ ...fault, methods: ["rotateGrant"] });

  it("makes one storage call, the rotation at the client's Durable Object", async () => {
    const { client, refreshToken } = await signedIn();
    const { env: clean, counts } = faultyEnv({});
    const res = await fetchWith(clean, "/oauth/token", refreshRequest(client, refreshToken));
    expect(res.status).toBe(200);
    expect(counts.RATE_LIMITER.calls).toBe(1);
    expect(counts.DB.calls + counts.CODES.calls + counts.LINK_REQUESTS.calls).toBe(0);
  });

  it.each([false, true])(
    "is repeated by the platform layer when the rotation fails (applied: %s): one answer, and its tokens work",
    async (applied) => {
      const { client, refreshToken } = await signedIn();
      const { env: faulty, counts } = faultyEnv({ RATE_LIMITER: rotation({ kind: "nth", n: 1, applied }) });
      const res = await fetchWith(faulty, "/oauth/token", refreshRequest(client, refreshToken));
      expect(counts.RATE_LIMITER.failed).toBe(1);
      expect(res.status).toBe(200);
      const tokens = (await res.json()) as Tokens;
      await expectOnlyLive(client, tokens.refresh_token, [refreshToken]);
      await expectWorking(client, tokens);
    },
  );

  it("answers 503 while the Durable Object is out, and the token works once it is back", async () => {
    const { client, refreshToken } = await signedIn();
    const { env: faulty } = faultyEnv({ RATE_LIMITER: rotation({ kind: "outage" }) });
    const first = await fetchWith(faulty, "/oauth/token", refreshRequest(client, refreshToken));
    expect(first.status).toBe(503);
    expect(first.headers.get("Retry-After")).toBe("1");
    expect(await first.json()).toMatchObject({ error: "temporarily_unavailable" });
    const retry = await refresh(client, refreshToken);
    expect(retry.status).toBe(200);
    const tokens = (await retry.json()) as Tokens;
    await expectOnlyLive(client, tokens.refresh_token, [refreshToken]);
    await expectWorking(client, tokens);
  });

  it("answers 503 while the client's Durable Object runs the earlier version (a deploy), and the token works after", async () => {
    const { client, refreshToken } = await signedIn();
    // What the runtime throws for a method the object's version does not have yet.
    const earlier = () =>
      Object.assign(new TypeError('The RPC receiver does not implement "rotateGrant".'), { remote: true });
    const { env: faulty } = faultyEnv({ RATE_LIMITER: rotation({ kind: "outage", error: earlier }) });
    const first = await fetchWith(faulty, "/oauth/token", refreshRequest(client, refreshToken));
    expect(first.status).toBe(503);
    expect(first.headers.get("Retry-After")).toBe("1");
    await first.body?.cancel();
    const retry = await refresh(client, refreshToken);
    expect(retry.status).toBe(200);
  });

  describe("the rotation landing after its deadline", () => {
    const late = rotation({ kind: "late", n: 1, ms: CALL_DEADLINE_MS + 500 });

    it("retried after it landed: the retry is answered within the grace window", { timeout: 15_000 }, async () => {
      const { client, refreshToken } = await signedIn();
      const { env: faulty, counts } = faultyEnv({ RATE_LIMITER: late });
      const first = await fetchWith(faulty, "/oauth/token", refreshRequest(client, refreshToken));
      expect(first.status).toBe(503);
      await first.body?.cancel();
      await counts.RATE_LIMITER.landed;
      const retry = await refresh(client, refreshToken);
      expect(retry.status).toBe(200);
      const tokens = (await retry.json()) as Tokens;
      await expectOnlyLive(client, tokens.refresh_token, [refreshToken]);
      await expectWorking(client, tokens);
    });

    it(
      "retried before it landed: the late rotation changes nothing, ends nothing, and reuse is still found",
      { timeout: 15_000 },
      async () => {
        const { client, refreshToken } = await signedIn();
        const { env: faulty, counts } = faultyEnv({ RATE_LIMITER: late });
        const first = await fetchWith(faulty, "/oauth/token", refreshRequest(client, refreshToken));
        expect(first.status).toBe(503);
        await first.body?.cancel();
        let landed = false;
        void counts.RATE_LIMITER.landed!.then(() => (landed = true));
        const retry = (await (await refresh(client, refreshToken)).json()) as Tokens;
        expect(landed).toBe(false);
        await counts.RATE_LIMITER.landed;
        // The late rotation found the token rotated already: the retry's successor is still the
        // current token, and the grant is live.
        await expectOnlyLive(client, retry.refresh_token, [refreshToken]);
        const next = await refresh(client, retry.refresh_token);
        expect(next.status).toBe(200);
        const latest = (await next.json()) as Tokens;
        // The first token presented again, its successor used since, is reuse: the grant ends.
        const replayed = await refresh(client, refreshToken);
        expect(replayed.status).toBe(400);
        expect(await replayed.json()).toMatchObject({ error: "invalid_grant" });
        expect(await introspect(client, latest.refresh_token)).toEqual({ active: false });
      },
    );
  });
});

describe("the group commit of rotations at the client's Durable Object", () => {
  /** Rotations queued in one turn, as requests arriving together are: each one's outcome. */
  async function queuedTogether(requests: { grant: string; generation: number; keepUntilMs: unknown }[]) {
    const limiter = rateLimiterFor(env, (await createClient()).id);
    return runInDurableObject(limiter, async (instance) => {
      const { rotations } = instance as unknown as { rotations: Rotations };
      const now = Math.floor(Date.now() / 1000);
      const outcomes = requests.map(({ grant, generation, keepUntilMs }) =>
        rotations.rotate({ grant, generation, now, keepUntilMs: keepUntilMs as number, replacing: undefined }),
      );
      const settled = await Promise.allSettled(outcomes);
      return { settled, current: requests.map(({ grant }) => rotations.current(grant)) };
    });
  }
  const later = Date.now() + 60_000;

  it("decides them in order: the second rotation of one token finds the first's successor", async () => {
    const { settled, current } = await queuedTogether([
      { grant: "a", generation: 0, keepUntilMs: later },
      { grant: "a", generation: 0, keepUntilMs: later },
      { grant: "b", generation: 0, keepUntilMs: later },
    ]);
    expect(settled.map((outcome) => (outcome.status === "fulfilled" ? outcome.value : outcome.reason))).toEqual([
      { outcome: "rotated", generation: 1 },
      { outcome: "behind", current: 1, madeFrom: 0, rotatedAt: expect.any(Number) },
      { outcome: "rotated", generation: 1 },
    ]);
    expect(current).toEqual([1, 1, 1]);
  });

  it("answers every rotation queued with one that fails with its error, and writes none of them", async () => {
    const { settled, current } = await queuedTogether([
      { grant: "a", generation: 0, keepUntilMs: later },
      // A value SQLite cannot bind: the transaction fails after the first rotation's write.
      { grant: "b", generation: 0, keepUntilMs: Symbol("not a number") },
    ]);
    expect(settled.map(({ status }) => status)).toEqual(["rejected", "rejected"]);
    expect(current).toEqual([0, 0]);
  });
});
