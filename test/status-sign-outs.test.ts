/**
 * The sign-out job (src/jobs/status-sign-outs.ts, every minute): a user refused by a write that
 * signs no one out (a re-import that blocks or deletes them) is signed out everywhere by the job's
 * next run, through the Worker's scheduled handler on real local D1 and Durable Objects. The
 * management API signs the user out itself, and the job's run after it only settles the listing.
 */
import { createScheduledController } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../src/db/client";
import { pendingSignOuts } from "../src/db/schema";
import { SIGN_OUT_CRON } from "../src/jobs/status-sign-outs";
import worker from "../src/index";
import type { Bindings } from "../src/env";
import { faultyEnv } from "./helpers/faults";
import { basicAuth, bearer, call, expectOAuthError, postForm, serverToken, userTokenResponse } from "./helpers/http";
import { createClient, createUser, importData } from "./helpers/seed";

const CALLBACK = "https://test.example/callback";
let nextUser = 1_300_000 + Math.floor(Math.random() * 50) * 100;
let client: { id: string; secret: string; redirectUris: string[] };
let admin: string;

beforeAll(async () => {
  client = {
    ...(await createClient({ grantTypes: ["client_credentials", "password", "refresh_token"] })),
    redirectUris: [CALLBACK],
  };
  admin = await serverToken(await createClient({ admin: true }));
});

/** A fresh user of `client`, signed in there: the import's row (to import again) and the tokens. */
async function signedInUser() {
  const userId = nextUser++;
  const user = await createUser(userId, { clients: [client.id], emailVerified: "2024-01-02 00:00:00" });
  return { userId, user, tokens: await userTokenResponse(user, client) };
}

/** The same user imported again with another status, as `npm run db:import` writes it. */
const reimport = (row: Record<string, unknown>, status: number) => importData({ users: [{ ...row, status }] });

const runJob = (bindings: Bindings = env) =>
  worker.scheduled(createScheduledController({ scheduledTime: Date.now(), cron: SIGN_OUT_CRON }), bindings);

async function pending(userId: number) {
  const db = openDatabase(env.DB);
  return db.select().from(pendingSignOuts).where(eq(pendingSignOuts.userId, userId)).all();
}

const refresh = (refreshToken: string) =>
  postForm(
    "/oauth/token",
    { grant_type: "refresh_token", refresh_token: refreshToken },
    basicAuth(client.id, client.secret),
  );

/** The user's grant is over: let in again, their old access token is refused and their refresh token refreshes nothing. */
async function expectGrantEnded({ user, tokens }: Awaited<ReturnType<typeof signedInUser>>) {
  await reimport(user.row, 1);
  expect((await call("/api/2/me", { headers: bearer(tokens.access_token) })).status).toBe(401);
  await expectOAuthError(await refresh(String(tokens.refresh_token)), "invalid_grant");
  // The account itself works again: a new sign-in is answered.
  expect((await userTokenResponse(user, client)).access_token).toEqual(expect.any(String));
}

describe("the sign-out job", () => {
  it("signs out, at its next run, a user an import blocked: the grant stays ended once the user is let in again", async () => {
    const signedIn = await signedInUser();
    await reimport(signedIn.user.row, -2);
    expect(await pending(signedIn.userId)).toEqual([{ userId: signedIn.userId, requested: expect.any(Number) }]);

    await runJob();
    expect(await pending(signedIn.userId)).toEqual([]);
    await expectGrantEnded(signedIn);
  });

  it("does the same for an import that makes a user inactive or deleted", async () => {
    for (const status of [-1, -3]) {
      const signedIn = await signedInUser();
      await reimport(signedIn.user.row, status);
      await runJob();
      await expectGrantEnded(signedIn);
    }
  });

  it("is what ends the grant: without a run, the user let in again still has their tokens", async () => {
    const signedIn = await signedInUser();
    await reimport(signedIn.user.row, -2);
    await reimport(signedIn.user.row, 1);
    expect((await call("/api/2/me", { headers: bearer(signedIn.tokens.access_token) })).status).toBe(200);
    // Let in again before the run: the refusal was recorded, and the run still ends the grant.
    await runJob();
    await expectGrantEnded(signedIn);
  });

  it("lists only a change into a refusing status, not a change between two refusing ones or out of them", async () => {
    const { userId, user } = await signedInUser();
    await reimport(user.row, 0);
    expect(await pending(userId)).toEqual([]);
    await reimport(user.row, -2);
    await runJob();
    await reimport(user.row, -3);
    expect(await pending(userId)).toEqual([]);
  });

  it("settles, at its next run, the listing of a user the management API blocked or erased and signed out itself", async () => {
    const blocked = await signedInUser();
    const res = await call(`/api/2/user/${blocked.userId}/status`, {
      method: "POST",
      headers: { ...bearer(admin), "Content-Type": "application/x-www-form-urlencoded" },
      body: "status=blocked",
    });
    expect(res.status).toBe(200);
    const erased = await signedInUser();
    expect((await call(`/api/2/user/${erased.userId}`, { method: "DELETE", headers: bearer(admin) })).status).toBe(200);
    // Listed for the job all the same: its run ends what a sign-in racing the request started.
    expect(await pending(blocked.userId)).toHaveLength(1);
    expect(await pending(erased.userId)).toHaveLength(1);
    await runJob();
    expect(await pending(blocked.userId)).toEqual([]);
    expect(await pending(erased.userId)).toEqual([]);
    await expectGrantEnded(blocked);
  });

  it("keeps a user listed when the Durable Object fails, and signs them out at the run after", async () => {
    const signedIn = await signedInUser();
    await reimport(signedIn.user.row, -2);
    const { env: faulty } = faultyEnv({ RATE_LIMITER: { kind: "outage" } });
    await runJob(faulty);
    expect(await pending(signedIn.userId)).toHaveLength(1);

    await runJob();
    expect(await pending(signedIn.userId)).toEqual([]);
    await expectGrantEnded(signedIn);
  });
});
