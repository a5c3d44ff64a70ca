/**
 * Callback deliveries (docs/callbacks.md, SPiD's `articles/callbacks.md`): the client's schedule
 * (durable-objects/callback-schedule.ts) queues one when its changes are due; this consumer reads
 * what waits in D1, posts it to the client's callback URL as SPiD did, `text/plain`
 * `<signature>.<payload>`, and settles it: delivered changes are deleted; after the last retry
 * they are marked failed, with an entry in the audit trail. Retries are the schedule's, armed
 * before the delivery was queued, so every message is acknowledged: a fault here, or a receiver
 * that refuses, leaves the changes waiting for the next try.
 */
import * as z from "zod/mini";
import { type Database, openDatabase } from "../db/client";
import { insertAuditEvent } from "../db/queries/audit";
import {
  changesWaiting,
  deliveredChanges,
  failedChanges,
  findCallbackClient,
  waitingChanges,
} from "../db/queries/callbacks";
import { CALLBACK_RETRY_DELAYS_SECONDS } from "../durable-objects/callback-schedule";
import { rateLimiterFor } from "../durable-objects/rate-limiter";
import type { Bindings } from "../env";
import { loggable } from "../errors";
import { formatDatetime, nowInSeconds } from "../http/datetime";
import { signData, signingKey } from "../http/signing";
import { signingSecretsAt } from "../oauth/signing-secrets";
import { type CallbackDelivery, callbackDeliverySchema } from "../schemas/callback-delivery";
import { keyRing, openSecret } from "../security/data-protection";

/** The queue's name, before its environment's suffix (wrangler.toml). */
export const CALLBACKS_QUEUE = "account-commerce-callbacks-";

/** SPiD gives a receiver thirty seconds. */
const DELIVERY_TIMEOUT_MS = 30_000;
/** The most changes one request carries; the rest follow a window later. */
export const MAX_CALLBACK_CHANGES = 5_000;

type Entry = { userId: number; changedFields: string; time: string };

export async function deliverCallbacks(batch: MessageBatch<unknown>, env: Bindings): Promise<void> {
  await Promise.all(
    batch.messages.map(async (message) => {
      const parsed = z.safeParse(callbackDeliverySchema, message.body);
      if (!parsed.success) console.error("callback delivery dropped: not a callback delivery");
      else {
        try {
          await deliver(env, parsed.data);
        } catch (error) {
          // The changes still wait; the schedule's retry comes for them.
          console.warn(`callbacks of client ${parsed.data.clientId} not settled: ${loggable(error)}`);
        }
      }
      message.ack();
    }),
  );
}

async function deliver(env: Bindings, { clientId, attempt }: CallbackDelivery): Promise<void> {
  const db = openDatabase(env.DB);
  const settle = (more: boolean) => rateLimiterFor(env, clientId).callbacksSettled(attempt, more);
  const [client, changes] = await Promise.all([
    findCallbackClient(db, clientId),
    waitingChanges(db, clientId, MAX_CALLBACK_CHANGES + 1),
  ]);
  const now = nowInSeconds();
  const sealed = client && signingSecretsAt(client, now).signsWith;
  if (changes.length === 0) return settle(false);
  const sent = changes.slice(0, MAX_CALLBACK_CHANGES);
  const lastId = sent.at(-1)!.id;
  // A client deleted since: nobody to tell.
  if (!client) {
    await deliveredChanges(db, clientId, lastId).run();
    return settle(changes.length > MAX_CALLBACK_CHANGES);
  }
  const url = client.disabled === null ? client.callbackUrl : null;
  if (!url || !sealed) {
    // Nowhere to send them, or nothing to sign them with: kept as failed, for a replay once fixed.
    const unsendable = client.disabled !== null ? "disabled" : !url ? "no_callback_url" : "no_signing_secret";
    console.warn(`callbacks of client ${clientId} not sent: ${unsendable}`);
    await db.batch([
      failedChanges(db, clientId, lastId, now),
      failureEntry(
        db,
        client.merchantId,
        clientId,
        { changes: sent.length, attempts: attempt + 1, reason: unsendable },
        now,
      ),
    ]);
    return settle(changes.length > MAX_CALLBACK_CHANGES);
  }
  const body = await signedBody(await openSecret(keyRing(env), sealed), entriesOf(sent));
  if (await post(url, body, clientId)) {
    const [, more] = await db.batch([deliveredChanges(db, clientId, lastId), changesWaiting(db, clientId)]);
    return settle(more.length > 0);
  }
  if (attempt < CALLBACK_RETRY_DELAYS_SECONDS.length) return;
  // The last retry failed: the changes are kept as failed, for a replay, and the trail says so.
  const [, more] = await db.batch([
    failedChanges(db, clientId, lastId, now),
    changesWaiting(db, clientId),
    failureEntry(
      db,
      client.merchantId,
      clientId,
      { changes: sent.length, attempts: attempt + 1, reason: "refused" },
      now,
    ),
  ]);
  await settle(more.length > 0);
}

/** The audit entry of changes kept as failed: in the client's merchant's trail, by the service. */
function failureEntry(
  db: Database,
  merchantId: number,
  clientId: string,
  detail: Record<string, unknown>,
  now: number,
) {
  return insertAuditEvent(db, { at: now, merchantId, clientId, actor: "service", action: "callback.failed", detail });
}

/** One entry per user: the fields changed since the last delivery, and when the last change was. */
function entriesOf(changes: { userId: number; changedFields: string; time: number }[]): Entry[] {
  const byUser = new Map<number, { fields: Set<string>; time: number }>();
  for (const { userId, changedFields, time } of changes) {
    const entry = byUser.get(userId) ?? { fields: new Set<string>(), time };
    for (const field of changedFields.split(",")) entry.fields.add(field);
    entry.time = Math.max(entry.time, time);
    byUser.set(userId, entry);
  }
  return [...byUser].map(([userId, { fields, time }]) => ({
    userId,
    changedFields: [...fields].join(","),
    time: formatDatetime(time),
  }));
}

/** SPiD's body: the payload Base64 URL encoded, signed with HMAC-SHA256 under the signing secret. */
async function signedBody(secret: string, entry: Entry[]): Promise<string> {
  const payload = JSON.stringify({ object: "user", algorithm: "HMAC-SHA256", entry });
  const { data, sig } = await signData(await signingKey(secret), payload);
  return `${sig}.${data}`;
}

/** Posts the body; true when the receiver accepted it (2xx; SPiD asks for 202). Never logs the body. */
async function post(url: string, body: string, clientId: string): Promise<boolean> {
  try {
    const res = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "text/plain" },
      body,
      redirect: "manual",
      signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
    });
    await res.body?.cancel();
    if (res.ok) return true;
    console.warn(`callback to client ${clientId} refused: ${res.status}`);
  } catch {
    console.warn(`callback to client ${clientId} not delivered`);
  }
  return false;
}
