/**
 * The retention job (a Cron Trigger, hourly; docs/operations.md "Retention"): what the service
 * no longer needs goes, in rounds of one D1 batch each, until a round finds little left or the
 * run's budget of rounds is spent (the next run goes on where this one stopped).
 */
import { openDatabase } from "../db/client";
import {
  purgeAuditEvents,
  purgeIdempotencyKeys,
  purgeRefreshTokens,
  purgeSessions,
  purgeSigninRequests,
} from "../db/queries/retention";
import type { Bindings } from "../env";
import { IDEMPOTENCY_KEY_SECONDS } from "../http/idempotency";

/** The audit trail is kept 13 months: a year's look back, and a month to act on it. */
export const AUDIT_RETENTION_SECONDS = 395 * 24 * 3600;
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
};

export async function purgeExpired(env: Bindings, now: number): Promise<Purged> {
  const db = openDatabase(env.DB);
  const purged: Purged = { refreshTokens: 0, sessions: 0, signinRequests: 0, auditEvents: 0, idempotencyKeys: 0 };
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const results = await db.batch([
      purgeRefreshTokens(db, now, ROWS_PER_ROUND),
      purgeSessions(db, now, ROWS_PER_ROUND),
      purgeSigninRequests(db, now - SIGNIN_REQUEST_GRACE_SECONDS, ROWS_PER_ROUND),
      purgeAuditEvents(db, now - AUDIT_RETENTION_SECONDS, ROWS_PER_ROUND),
      purgeIdempotencyKeys(db, now - IDEMPOTENCY_KEY_SECONDS, ROWS_PER_ROUND),
    ]);
    const counts = results.map((result) => result.meta.changes);
    purged.refreshTokens += counts[0]!;
    purged.sessions += counts[1]!;
    purged.signinRequests += counts[2]!;
    purged.auditEvents += counts[3]!;
    purged.idempotencyKeys += counts[4]!;
    if (Math.max(...counts) < ROWS_PER_ROUND) break;
  }
  return purged;
}
