/**
 * Telling clients of changes (docs/callbacks.md): a change's callback rows are a statement for the
 * change's own batch (db/queries/callbacks.ts), and once the batch is written the schedules of the
 * clients told are woken, off the answer. A wake-up that is lost (a fault, the Worker stopping)
 * loses nothing: the retention job wakes the schedule of every client whose changes wait too long.
 */
import type { Context } from "hono";
import { type CallbackChange, callbackChangeRows } from "../db/queries/callbacks";
import { rateLimiterFor } from "../durable-objects/rate-limiter";
import type { AppEnv, Bindings } from "../env";
import { logUnlessPlatformFault } from "../errors";

export type { CallbackChange };

/** The change's callback rows, for its batch; its result names the clients told (wakeSchedules). */
export function callbackRows(c: Context<AppEnv>, change: CallbackChange, now: number) {
  return callbackChangeRows(c.get("db")(), change, now);
}

/** Wakes the schedules of the clients `told` (a callbackRows result), off the answer. */
export function wakeSchedules(c: Context<AppEnv>, told: readonly { clientId: string }[]): void {
  if (told.length === 0) return;
  c.executionCtx.waitUntil(
    wakeClients(
      c.env,
      told.map(({ clientId }) => clientId),
    ).catch((error: unknown) => logUnlessPlatformFault("callback schedule not woken", error)),
  );
}

/**
 * Wakes each client's schedule once; one that fails does not keep the others from waking (its
 * changes wait for the retention job's next run). Throws the first failure, once all are tried.
 */
export async function wakeClients(env: Bindings, clientIds: readonly string[]): Promise<void> {
  const outcomes = await Promise.allSettled(
    [...new Set(clientIds)].map((clientId) => rateLimiterFor(env, clientId).callbacksChanged(clientId)),
  );
  const failed = outcomes.find((outcome) => outcome.status === "rejected");
  if (failed) throw failed.reason;
}
