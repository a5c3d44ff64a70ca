/**
 * grant_type=refresh_token under a fault of each storage call it makes, before and after the call
 * did its work: whatever the first answer, the client's retry with the refresh token it still
 * holds succeeds, and what it is given goes on working. A rotation whose answer was lost is
 * answered anew within the grace window (src/oauth/refresh-tokens.ts) instead of read as reuse.
 */
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { openDatabase } from "../../src/db/client";
import { refreshTokens } from "../../src/db/schema";
import { CALL_DEADLINE_MS } from "../../src/platform/calls";
import { keyRing, protectSecret } from "../../src/security/data-protection";
import { type Fault, faultyEnv, fetchWith } from "../helpers/faults";
import { basicAuth, bearer, call, postForm, userTokenResponse } from "../helpers/http";
import { createClient, createUser } from "../helpers/seed";

/** A refresh's storage calls: one D1 statement that rotates the token in place and returns its row. */
const REFRESH_CALLS = [{ n: 1, what: "the rotation" }] as const;

const CALLBACK = "https://test.example/callback";
let nextUser = 12_000 + Math.floor(Math.random() * 50) * 20;

/** A fresh client (its own tokens only) with a user signed in to it: the refresh token it holds. */
async function signedIn() {
  const client = await createClient({ grantTypes: ["password", "refresh_token"], autoApprove: true });
  const user = await createUser(nextUser++, { clients: [client.id] });
  const tokens = await userTokenResponse(user, { ...client, redirectUris: [CALLBACK] });
  return { client, refreshToken: tokens.refresh_token as string };
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
 * The client's one grant: still live, and its current token the one `answered` (a lost rotation
 * leaves no other live behind), or revoked.
 */
async function grantOf(client: Client) {
  const rows = await openDatabase(env.DB)
    .select()
    .from(refreshTokens)
    .where(eq(refreshTokens.clientId, client.id))
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

describe("a refresh's storage calls", () => {
  it("are the ones these cases fail, and no others", async () => {
    const { client, refreshToken } = await signedIn();
    const { env: clean, counts } = faultyEnv({});
    const res = await fetchWith(clean, "/oauth/token", refreshRequest(client, refreshToken));
    expect(res.status).toBe(200);
    expect(counts.DB.calls).toBe(REFRESH_CALLS.length);
    expect(counts.CODES.calls + counts.RATE_LIMITER.calls + counts.LINK_REQUESTS.calls).toBe(0);
  });
});

describe("a refresh whose storage call fails", () => {
  const cases = REFRESH_CALLS.flatMap(({ n, what }) =>
    [false, true].map((applied) => [what, applied ? "after" : "before", { n, applied }] as const),
  );

  it.each(cases)(
    "at %s, %s it was applied: a 503, then the retry succeeds and its tokens work",
    async (_, __, fault) => {
      const { client, refreshToken } = await signedIn();
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
    const { client, refreshToken } = await signedIn();
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

describe("grant_type=refresh_token, the rotation landing after its deadline", () => {
  /** The rotation stalls past the 3 s deadline, then is applied after all. */
  const lateRotation: Fault = { kind: "late", n: 1, ms: CALL_DEADLINE_MS + 500 };

  it("retried after it landed: the retry is answered within the grace window", { timeout: 15_000 }, async () => {
    const { client, refreshToken } = await signedIn();
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
      const { client, refreshToken } = await signedIn();
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
