/**
 * Callbacks to clients (docs/callbacks.md): a client with a callback URL is told, in SPiD's
 * signed format, when its users change; changes are batched per client (CALLBACK_BATCH_SECONDS is
 * 2 in tests), a receiver that fails is retried on SPiD's schedule (the clock moved on), a change
 * whose wake-up was lost is found by the retention job, and changes that failed every retry are
 * recorded in the audit trail and can be replayed. Everything arrives at `*.receiver.test`
 * (vitest.config.ts), through the real local queue, Durable Object alarm and D1.
 */
import { createScheduledController, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { base64url } from "jose";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { openDatabase } from "../src/db/client";
import { callbackChanges } from "../src/db/schema";
import { CALLBACK_RETRY_DELAYS_SECONDS } from "../src/durable-objects/callback-schedule";
import { rateLimiterFor } from "../src/durable-objects/rate-limiter";
import worker from "../src/index";
import { consumeBatch } from "./helpers/queues";
import { faultyEnv, fetchWith, platformErrors } from "./helpers/faults";
import { bearer, call, container, serverToken } from "./helpers/http";
import { createClient, createUser, importData } from "./helpers/seed";

const FORM = { "Content-Type": "application/x-www-form-urlencoded" };
const SIGNING_SECRET = "callback-signing-secret-0123456789";

let nextUser = 31_000 + Math.floor(Math.random() * 50) * 40;
let admin: { id: string; secret: string };
let adminToken: string;
let operatorToken: string;

beforeAll(async () => {
  await importData({ merchants: [{ merchantId: 91, name: "Callback operator" }] });
  admin = await createClient({ admin: true });
  adminToken = await serverToken(admin);
  operatorToken = await serverToken(await createClient({ merchantId: 91, universalDataAccess: true }));
});

afterEach(() => {
  vi.useRealTimers();
});

/** A client of merchant 10 told of changes at a fresh `*.receiver.test` URL (`path` says how it answers). */
async function callbackClient(path = "/callbacks", overrides: Record<string, unknown> = {}) {
  const host = `cb-${crypto.randomUUID().slice(0, 8)}.receiver.test`;
  const callbackUrl = `https://${host}${path}`;
  const client = await createClient({ callbackUrl, signingSecret: SIGNING_SECRET, ...overrides });
  return { ...client, callbackUrl };
}

async function userOf(...clientIds: string[]) {
  const userId = nextUser++;
  await createUser(userId, { clients: clientIds, emailVerified: "2024-01-02 00:00:00" });
  return userId;
}

type Arrival = { url: string; contentType: string | null; body: string };

async function arrivedAt(url: string): Promise<Arrival[]> {
  const all = (await (await env.RECEIVER.fetch("https://receiver/")).json()) as Arrival[];
  return all.filter((arrival) => arrival.url === url);
}

/** The requests at `url` once there are `count` of them (a batching window and a queue batch away). */
async function arrivals(url: string, count: number): Promise<Arrival[]> {
  for (let waited = 0; waited < 20_000; waited += 100) {
    const found = await arrivedAt(url);
    if (found.length >= count) return found;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${count} callback(s) at ${url} did not arrive`);
}

type Payload = { object: string; algorithm: string; entry: { userId: number; changedFields: string; time: string }[] };

/** Verifies the body as SPiD's PHP example does (HMAC-SHA256 of the payload text), then decodes it. */
async function verified(body: string, secret = SIGNING_SECRET): Promise<Payload> {
  const [sig, payload] = body.split(".", 2) as [string, string];
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["verify"],
  );
  const valid = await crypto.subtle.verify("HMAC", key, base64url.decode(sig), new TextEncoder().encode(payload));
  expect(valid).toBe(true);
  return JSON.parse(new TextDecoder().decode(base64url.decode(payload))) as Payload;
}

function setStatus(token: string, userId: number, status: string) {
  return call(`/api/2/user/${userId}/status`, {
    method: "POST",
    headers: { ...bearer(token), ...FORM },
    body: `status=${status}`,
  });
}

function update(token: string, userId: number, body: string) {
  return call(`/api/2/user/${userId}`, { method: "POST", headers: { ...bearer(token), ...FORM }, body });
}

async function waiting(clientId: string) {
  return openDatabase(env.DB).select().from(callbackChanges).where(eq(callbackChanges.clientId, clientId)).all();
}

/** Waits for the client's changes to be settled (the delete after a delivery lands a moment later). */
async function settledRows(clientId: string, left: (rows: Awaited<ReturnType<typeof waiting>>) => boolean) {
  for (let waited = 0; waited < 10_000; waited += 100) {
    const rows = await waiting(clientId);
    if (left(rows)) return rows;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error("the client's callback changes were not settled");
}

describe("callbacks to clients", { timeout: 60_000 }, () => {
  it("tells a client that a user was blocked: a text/plain POST, signed with its signing secret as SPiD signs", async () => {
    const client = await callbackClient();
    const userId = await userOf(client.id);
    expect((await setStatus(adminToken, userId, "blocked")).status).toBe(200);
    const [arrival] = await arrivals(client.callbackUrl, 1);
    expect(arrival!.contentType).toBe("text/plain");
    const payload = await verified(arrival!.body);
    expect(payload).toEqual({
      object: "user",
      algorithm: "HMAC-SHA256",
      entry: [{ userId, changedFields: "status", time: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/) }],
    });
    // Accepted (202): the change is delivered and no longer waits.
    await settledRows(client.id, (rows) => rows.length === 0);
  });

  it("a signature under another secret does not verify", async () => {
    const client = await callbackClient();
    const userId = await userOf(client.id);
    await setStatus(adminToken, userId, "inactive");
    const [arrival] = await arrivals(client.callbackUrl, 1);
    await expect(verified(arrival!.body, "another-secret-altogether-01234")).rejects.toThrow();
  });

  it("batches a window's changes into one request, one entry per user with every field that changed", async () => {
    const client = await callbackClient();
    const [first, second] = [await userOf(client.id), await userOf(client.id)];
    expect(
      (await update(adminToken, first, `name=${encodeURIComponent(JSON.stringify({ givenName: "Ada" }))}`)).status,
    ).toBe(200);
    expect((await setStatus(adminToken, first, "inactive")).status).toBe(200);
    expect((await update(adminToken, second, "gender=female")).status).toBe(200);
    const [arrival] = await arrivals(client.callbackUrl, 1);
    const { entry } = await verified(arrival!.body);
    expect(entry.map(({ userId, changedFields }) => ({ userId, changedFields }))).toEqual([
      { userId: first, changedFields: "name.givenName,status" },
      { userId: second, changedFields: "gender" },
    ]);
    // Nothing more came after the window: one request for the three changes.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(await arrivedAt(client.callbackUrl)).toHaveLength(1);
  });

  it("tells only the user's clients that have a callback URL and are enabled; erasure and withdrawal too", async () => {
    const told = await callbackClient();
    const alsoTold = await callbackClient();
    const disabled = await callbackClient();
    const stranger = await callbackClient();
    const silent = await createClient();
    const userId = await userOf(told.id, alsoTold.id, disabled.id, silent.id);
    await userOf(stranger.id);
    const disabling = await call(`/api/2/client/${disabled.id}/status`, {
      method: "POST",
      headers: { ...bearer(adminToken), ...FORM },
      body: "status=disabled",
    });
    expect(disabling.status).toBe(200);
    // The connection to one client withdrawn: that client is told, before the connection goes.
    const res = await call(`/api/2/user/${userId}/connection?clientId=${alsoTold.id}`, {
      method: "DELETE",
      headers: bearer(adminToken),
    });
    expect(res.status).toBe(200);
    expect((await call(`/api/2/user/${userId}`, { method: "DELETE", headers: bearer(adminToken) })).status).toBe(200);
    const [forTold] = await arrivals(told.callbackUrl, 1);
    expect((await verified(forTold!.body)).entry).toEqual([
      expect.objectContaining({ userId, changedFields: "status" }),
    ]);
    const [forAlsoTold] = await arrivals(alsoTold.callbackUrl, 1);
    expect((await verified(forAlsoTold!.body)).entry).toEqual([
      expect.objectContaining({ userId, changedFields: "connection" }),
    ]);
    expect(await waiting(disabled.id)).toEqual([]);
    expect(await arrivedAt(disabled.callbackUrl)).toEqual([]);
    // A client without a callback URL has no rows; one the user is not connected to is not told.
    expect(await waiting(silent.id)).toEqual([]);
    expect(await waiting(stranger.id)).toEqual([]);
  });

  it("tells the merchant's clients of a product access granted or revoked, and not of a grant that changed nothing", async () => {
    const shop = await callbackClient("/callbacks", { grantTypes: ["client_credentials"] });
    const productId = 930_000 + Math.floor(Math.random() * 10_000);
    await importData({
      version: 2,
      products: [
        {
          productId,
          clientId: shop.id,
          type: 1,
          name: "Callback product",
          price: "100",
          vat: 2500,
          currency: "NOK",
          status: 3,
          created: "2024-01-01 00:00:00",
        },
      ],
    });
    // Connected to another merchant's client too, which is not told of this merchant's products.
    const elsewhere = await callbackClient("/callbacks", { merchantId: 20 });
    const userId = await userOf(shop.id, elsewhere.id);
    const token = await serverToken(shop);
    const grant = () => call(`/api/2/user/${userId}/product/${productId}`, { method: "POST", headers: bearer(token) });
    expect((await grant()).status).toBe(200);
    expect(await waiting(shop.id)).toHaveLength(1);
    // Granted again: nothing changed, nothing to tell.
    expect((await grant()).status).toBe(200);
    expect(await waiting(shop.id)).toHaveLength(1);
    const [arrival] = await arrivals(shop.callbackUrl, 1);
    expect((await verified(arrival!.body)).entry).toEqual([
      expect.objectContaining({ userId, changedFields: "productAccess" }),
    ]);
    await settledRows(shop.id, (rows) => rows.length === 0);
    const revoke = () =>
      call(`/api/2/user/${userId}/product/${productId}`, { method: "DELETE", headers: bearer(token) });
    expect((await revoke()).status).toBe(200);
    expect((await revoke()).status).toBe(200);
    expect(await waiting(shop.id)).toHaveLength(1);
    await arrivals(shop.callbackUrl, 2);
    expect(await waiting(elsewhere.id)).toEqual([]);
    expect(await arrivedAt(elsewhere.callbackUrl)).toEqual([]);
  });

  it("retries a receiver that answered 500 five minutes later, as the same request with what waits by then", async () => {
    const client = await callbackClient("/fail-1/callbacks");
    const userId = await userOf(client.id);
    await setStatus(adminToken, userId, "inactive");
    const [failed] = await arrivals(client.callbackUrl, 1);
    expect(await waiting(client.id)).toHaveLength(1);
    const limiter = rateLimiterFor(env, client.id);
    const schedule = await runInDurableObject(limiter, async (_, state) => ({
      alarm: await state.storage.getAlarm(),
      callbacks: state.storage.kv.get<{ due: number; attempt: number }>("callbacks"),
    }));
    // The retry is armed five minutes after the try, as the second try.
    const fiveMinutes = CALLBACK_RETRY_DELAYS_SECONDS[0] * 1000;
    expect(schedule.callbacks!.attempt).toBe(1);
    expect(schedule.callbacks!.due - Date.now()).toBeGreaterThan(fiveMinutes - 10_000);
    expect(schedule.callbacks!.due - Date.now()).toBeLessThanOrEqual(fiveMinutes);
    expect(schedule.alarm).toBeLessThanOrEqual(schedule.callbacks!.due);
    // Not before it is due.
    expect(await runDurableObjectAlarm(limiter)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await arrivedAt(client.callbackUrl)).toHaveLength(1);
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + CALLBACK_RETRY_DELAYS_SECONDS[0] * 1000 + 1_000 });
    expect(await runDurableObjectAlarm(limiter)).toBe(true);
    const [, retried] = await arrivals(client.callbackUrl, 2);
    expect(retried!.body).toBe(failed!.body);
    await settledRows(client.id, (rows) => rows.length === 0);
  });

  it("after the last retry fails: the changes are kept as failed, the audit trail says so, and a replay sends them", async () => {
    const client = await callbackClient("/fail-6/callbacks");
    const userId = await userOf(client.id);
    await setStatus(adminToken, userId, "inactive");
    await arrivals(client.callbackUrl, 1);
    const limiter = rateLimiterFor(env, client.id);
    let now = Date.now();
    for (const [retry, delay] of CALLBACK_RETRY_DELAYS_SECONDS.entries()) {
      now += delay * 1000 + 1_000;
      vi.useFakeTimers({ toFake: ["Date"], now });
      expect(await runDurableObjectAlarm(limiter)).toBe(true);
      await arrivals(client.callbackUrl, retry + 2);
    }
    const [row] = await settledRows(client.id, (rows) => rows.every((row) => row.failed !== null));
    expect(row).toMatchObject({ userId, changedFields: "status" });
    vi.useRealTimers();
    const trail = await container(
      await call(`/api/2/audit?action=callback.failed&clientId=${client.id}`, { headers: bearer(operatorToken) }),
    );
    expect(Object.values(trail.data as object)).toEqual([
      expect.objectContaining({
        actor: "service",
        action: "callback.failed",
        detail: { changes: 1, attempts: 6, reason: "refused" },
      }),
    ]);
    // The admin replays them: they go with the next callback, and are delivered.
    const replay = await call(`/api/2/client/${client.id}/callbacks/replay`, {
      method: "POST",
      headers: bearer(adminToken),
    });
    expect(replay.status).toBe(200);
    expect((await container(replay)).data).toEqual({ clientId: client.id, replayed: 1 });
    const all = await arrivals(client.callbackUrl, 7);
    expect((await verified(all[6]!.body)).entry).toEqual([
      expect.objectContaining({ userId, changedFields: "status" }),
    ]);
    await settledRows(client.id, (rows) => rows.length === 0);
  });

  it("a replay is the admin's or the operator's: a plain client's token is refused", async () => {
    const client = await callbackClient();
    const res = await call(`/api/2/client/${client.id}/callbacks/replay`, {
      method: "POST",
      headers: bearer(await serverToken(client)),
    });
    expect(res.status).toBe(401);
  });

  it("loses nothing when the Worker stops between a change and its wake-up: the retention job wakes the schedule", async () => {
    const client = await callbackClient();
    const userId = await userOf(client.id);
    expect((await update(adminToken, userId, "gender=male")).status).toBe(200);
    await arrivals(client.callbackUrl, 1);
    await settledRows(client.id, (rows) => rows.length === 0);
    // The wake-up after the change's batch fails, as it would never come if the Worker stopped.
    const { env: faulty, counts } = faultyEnv({
      RATE_LIMITER: { kind: "outage", error: platformErrors.doOverloaded, methods: ["callbacksChanged"] },
    });
    const res = await fetchWith(faulty, `/api/2/user/${userId}`, {
      method: "POST",
      headers: { ...bearer(adminToken), ...FORM },
      body: "gender=female",
    });
    expect(res.status).toBe(200);
    expect(counts.RATE_LIMITER.failed).toBeGreaterThan(0);
    // The change waits in D1, but no schedule knows of it: a window on, nothing came.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await arrivedAt(client.callbackUrl)).toHaveLength(1);
    expect(await waiting(client.id)).toHaveLength(1);
    // The hourly job finds it overdue (two windows) and wakes the client's schedule, whose alarm
    // then queues the delivery a window on (the clock is moved, not waited for).
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 10_000 });
    await worker.scheduled(createScheduledController({ scheduledTime: Date.now(), cron: "17 * * * *" }), env);
    vi.setSystemTime(Date.now() + 3_000);
    expect(await runDurableObjectAlarm(rateLimiterFor(env, client.id))).toBe(true);
    const [, delivered] = await arrivals(client.callbackUrl, 2);
    expect((await verified(delivered!.body)).entry).toEqual([
      expect.objectContaining({ userId, changedFields: "gender" }),
    ]);
  });

  it("keeps the changes of a client with no signing secret as failed, in the audit trail with why", async () => {
    const client = await callbackClient("/callbacks", { signingSecret: undefined });
    const userId = await userOf(client.id);
    await setStatus(adminToken, userId, "inactive");
    const [row] = await settledRows(client.id, (rows) => rows.length > 0 && rows.every((row) => row.failed !== null));
    expect(row).toMatchObject({ userId, changedFields: "status" });
    expect(await arrivedAt(client.callbackUrl)).toEqual([]);
    const trail = await container(
      await call(`/api/2/audit?action=callback.failed&clientId=${client.id}`, { headers: bearer(operatorToken) }),
    );
    expect(Object.values(trail.data as object)).toEqual([
      expect.objectContaining({ detail: { changes: 1, attempts: 1, reason: "no_signing_secret" } }),
    ]);
  });

  it("keeps the changes of a client disabled before its delivery as failed, and sends nothing", async () => {
    const client = await callbackClient();
    const userId = await userOf(client.id);
    await setStatus(adminToken, userId, "inactive");
    // Within the window: the change waits, then the client is disabled.
    const disabling = await call(`/api/2/client/${client.id}/status`, {
      method: "POST",
      headers: { ...bearer(adminToken), ...FORM },
      body: "status=disabled",
    });
    expect(disabling.status).toBe(200);
    await settledRows(client.id, (rows) => rows.length > 0 && rows.every((row) => row.failed !== null));
    expect(await arrivedAt(client.callbackUrl)).toEqual([]);
    const trail = await container(
      await call(`/api/2/audit?action=callback.failed&clientId=${client.id}`, { headers: bearer(operatorToken) }),
    );
    expect(Object.values(trail.data as object)).toEqual([
      expect.objectContaining({ detail: { changes: 1, attempts: 1, reason: "disabled" } }),
    ]);
  });

  it("acknowledges a message that is no delivery, and makes no request for a client with nothing waiting", async () => {
    const client = await callbackClient();
    const outcome = await consumeBatch("account-commerce-callbacks-local", [
      { nonsense: true },
      { clientId: client.id, attempt: 0 },
    ]);
    expect(outcome.acked.sort()).toEqual(["m0", "m1"]);
    expect(outcome.retried).toEqual([]);
    expect(await arrivedAt(client.callbackUrl)).toEqual([]);
  });

  it("the import refuses a callback URL that is not https", async () => {
    await expect(createClient({ callbackUrl: "http://example.com/callbacks" })).rejects.toThrow(/callbackUrl/);
  });
});
