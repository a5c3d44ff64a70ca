/**
 * The retention job (a Cron Trigger, hourly; docs/operations.md "Retention"): what the service
 * no longer needs goes, in rounds of one D1 batch each, until a round finds little left or the
 * run's budget of rounds is spent (the next run goes on where this one stopped). The same rounds
 * copy the parts of users from before migration 0031 into their rows (db/queries/users.ts).
 */
import { type Database, openDatabase } from "../db/client";
import { clientsWithOverdueChanges } from "../db/queries/callbacks";
import {
  copyUserParts,
  purgeAuditEvents,
  purgeFailedCallbacks,
  purgeIdempotencyKeys,
  purgePhoneVerifications,
  purgeRefreshTokens,
  purgeSessions,
  purgeSigninRequests,
} from "../db/queries/retention";
import { batchWindowMs } from "../durable-objects/callback-schedule";
import type { Bindings } from "../env";
import { logUnlessPlatformFault } from "../errors";
import { wakeClients } from "../events/callbacks";
import { IDEMPOTENCY_KEY_SECONDS } from "../http/idempotency";

/** The audit trail is kept 13 months: a year's look back, and a month to act on it. */
export const AUDIT_RETENTION_SECONDS = 395 * 24 * 3600;
/** A callback that failed every retry is kept 30 days for a replay (docs/callbacks.md). */
export const FAILED_CALLBACK_RETENTION_SECONDS = 30 * 24 * 3600;
/** Clients whose schedules one run wakes at most. */
const MAX_WOKEN_CLIENTS = 1_000;
/** A sign-in link's row outlives its expiry by an hour: a browser's use of it may still be retried. */
const SIGNIN_REQUEST_GRACE_SECONDS = 3600;
/** Rows each delete removes per round, and rounds per run: at most 50,000 rows of each kind an hour. */
const ROWS_PER_ROUND = 1_000;
const MAX_ROUNDS = 50;

export type Purged = {
  refreshTokens: number;
  sessions: number;
  signinRequests: number;
  auditEvents: number;
  idempotencyKeys: number;
  failedCallbacks: number;
  phoneVerifications: number;
  /** Users from before migration 0031 whose parts were copied into their rows. */
  userPartsCopied: number;
  /** Clients whose waiting callbacks were overdue, their schedules woken. */
  callbacksWoken: number;
};

export async function purgeExpired(env: Bindings, now: number): Promise<Purged> {
  const db = openDatabase(env.DB);
  const purged: Purged = {
    refreshTokens: 0,
    sessions: 0,
    signinRequests: 0,
    auditEvents: 0,
    idempotencyKeys: 0,
    failedCallbacks: 0,
    phoneVerifications: 0,
    userPartsCopied: 0,
    callbacksWoken: 0,
  };
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const results = await db.batch([
      purgeRefreshTokens(db, now, ROWS_PER_ROUND),
      purgeSessions(db, now, ROWS_PER_ROUND),
      purgeSigninRequests(db, now - SIGNIN_REQUEST_GRACE_SECONDS, ROWS_PER_ROUND),
      purgeAuditEvents(db, now - AUDIT_RETENTION_SECONDS, ROWS_PER_ROUND),
      purgeIdempotencyKeys(db, now - IDEMPOTENCY_KEY_SECONDS, ROWS_PER_ROUND),
      purgeFailedCallbacks(db, now - FAILED_CALLBACK_RETENTION_SECONDS, ROWS_PER_ROUND),
      purgePhoneVerifications(db, now, ROWS_PER_ROUND),
      copyUserParts(db, ROWS_PER_ROUND),
    ]);
    const counts = results.map((result) => result.meta.changes);
    purged.refreshTokens += counts[0]!;
    purged.sessions += counts[1]!;
    purged.signinRequests += counts[2]!;
    purged.auditEvents += counts[3]!;
    purged.idempotencyKeys += counts[4]!;
    purged.failedCallbacks += counts[5]!;
    purged.phoneVerifications += counts[6]!;
    purged.userPartsCopied += counts[7]!;
    if (Math.max(...counts) < ROWS_PER_ROUND) break;
  }
  purged.callbacksWoken = await wakeOverdueCallbacks(env, db, now);
  return purged;
}

/**
 * Wakes the schedule of every client whose changes have waited two batching windows: the Worker
 * stopped between a change and its wake-up (events/callbacks.ts). A schedule already under way
 * takes the wake-up as a change it will send with its next try.
 */
async function wakeOverdueCallbacks(env: Bindings, db: Database, now: number) {
  const before = now - (2 * batchWindowMs(env)) / 1000;
  const overdue = await clientsWithOverdueChanges(db, before, MAX_WOKEN_CLIENTS);
  try {
    await wakeClients(
      env,
      overdue.map(({ clientId }) => clientId),
    );
  } catch (error) {
    // The purge is done; the schedules not woken are tried again in an hour.
    logUnlessPlatformFault("retention: a callback schedule not woken", error);
  }
  return overdue.length;
}
