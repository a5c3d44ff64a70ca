/**
 * Blocking a user under the platform's faults: each storage call of POST /api/2/user/{id}/status
 * failing, before or after it was applied, once or for good, answers the block or a 503; the
 * caller's retry then blocks, and a blocked user never keeps a working token. The notices and the
 * access tokens' revocations go out before the one D1 batch that blocks, so a fault before it
 * leaves the user as they were, never blocked with a grant still live.
 */
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { openDatabase } from "../../src/db/client";
import { users } from "../../src/db/schema";
import { type BindingName, type Fault, faultyEnv, fetchWith } from "../helpers/faults";
import { basicAuth, bearer, call, postForm, serverToken, userTokenResponse } from "../helpers/http";
import { createClient, createUser } from "../helpers/seed";

let nextUser = 25_000 + Math.floor(Math.random() * 50) * 60;

type StorageCall = { binding: BindingName; n: number; what: string; write?: true };

/** The calls of a block, in order, for a user with a grant at a client that takes back-channel notices. */
const CALLS: StorageCall[] = [
  { binding: "RATE_LIMITER", n: 1, what: "the call's admission" },
  { binding: "DB", n: 1, what: "the caller's rights" },
  { binding: "DB", n: 2, what: "the user's read" },
  { binding: "DB", n: 3, what: "the sessions' read" },
  { binding: "DB", n: 4, what: "the grants' read" },
  { binding: "DB", n: 5, what: "the back-channel clients' read" },
  { binding: "LOGOUT_NOTICES", n: 1, what: "the notices' queueing" },
  { binding: "RATE_LIMITER", n: 2, what: "the access tokens' revocation" },
  { binding: "DB", n: 6, what: "the batch that blocks", write: true },
];

function casesOf(calls: StorageCall[]) {
  return calls.flatMap((at) =>
    [false, true].flatMap((applied) =>
      [false, true].map((forGood) => ({
        name: `${at.what}, ${applied ? "after" : "before"} it was applied, ${forGood ? "for good" : "once"}`,
        at,
        fault: (forGood ? { kind: "outage" } : { kind: "nth", n: at.n, applied }) as Fault,
      })),
    ),
  );
}

let log: ReturnType<typeof vi.spyOn>;
beforeAll(() => {
  log = vi.spyOn(console, "error").mockImplementation(() => {});
});
afterAll(() => log.mockRestore());

/** A user signed in (openid, so the client takes notices) at a client with a back-channel endpoint. */
async function signedIn() {
  const client = {
    ...(await createClient({
      grantTypes: ["password", "refresh_token"],
      backchannelLogoutUri: `https://rp-${crypto.randomUUID().slice(0, 8)}.receiver.test/bc`,
    })),
    redirectUris: ["https://test.example/callback"],
  };
  const userId = nextUser++;
  const user = await createUser(userId, { clients: [client.id], emailVerified: "2024-01-02 00:00:00" });
  const tokens = (await userTokenResponse(user, client, "openid")) as Record<string, string>;
  // A fresh admin client each time: its first call is admitted by its RateLimiter, not a lease.
  const admin = await serverToken(await createClient({ admin: true }));
  return { client, userId, tokens, block: blockedBy(admin) };
}

function blockedBy(admin: string) {
  return {
    method: "POST",
    headers: { ...bearer(admin), "Content-Type": "application/x-www-form-urlencoded" },
    body: "status=blocked",
  };
}

async function statusOf(userId: number) {
  const row = await openDatabase(env.DB).select({ status: users.status }).from(users).where(eq(users.id, userId)).get();
  return row!.status;
}

/** Nothing the user had is left working: the access token refused, the refresh token too. */
async function expectEnded(client: { id: string; secret: string }, tokens: Record<string, string>) {
  expect((await call("/api/2/me", { headers: bearer(tokens.access_token!) })).status).toBe(401);
  const refreshed = await postForm(
    "/oauth/token",
    { grant_type: "refresh_token", refresh_token: tokens.refresh_token! },
    basicAuth(client.id, client.secret),
  );
  expect(refreshed.status).toBe(400);
}

describe("POST /api/2/user/{userId}/status under a storage fault", () => {
  it("makes the calls these cases fail, and no others", async () => {
    const { userId, block } = await signedIn();
    const { env: clean, counts } = faultyEnv({});
    expect((await fetchWith(clean, `/api/2/user/${userId}/status`, block)).status).toBe(200);
    for (const binding of ["DB", "RATE_LIMITER", "LOGOUT_NOTICES", "CODES", "LINK_REQUESTS"] as const) {
      expect(counts[binding].calls, binding).toBe(CALLS.filter((c) => c.binding === binding).length);
    }
  });

  it.each(casesOf(CALLS))("at $name: blocked, or a 503 and the retry blocks", async ({ at, fault }) => {
    const { client, userId, tokens, block } = await signedIn();
    const faulty = faultyEnv({ [at.binding]: fault });
    const res = await fetchWith(faulty.env, `/api/2/user/${userId}/status`, block);
    expect(faulty.counts[at.binding].failed).toBeGreaterThanOrEqual(1);
    expect([200, 503]).toContain(res.status);
    if (res.status === 503) {
      // Only the batch that blocks can have landed; before it, nothing changed.
      if (!(at.write && "applied" in fault && fault.applied)) expect(await statusOf(userId)).toBe(1);
      expect((await fetchWith(env, `/api/2/user/${userId}/status`, block)).status).toBe(200);
    }
    expect(await statusOf(userId)).toBe(-2);
    // Unblocked again, the user may sign in anew, but what the block ended stays ended: the
    // revocations landed, not merely the status that refuses a blocked user.
    expect((await fetchWith(env, `/api/2/user/${userId}/status`, { ...block, body: "status=active" })).status).toBe(
      200,
    );
    await expectEnded(client, tokens);
  });
});
