/** The sign-outs a status change left for the sign-out job (db/schema/sign-in.ts `pendingSignOuts`). */
import { and, asc, eq, lte, sql } from "drizzle-orm";
import type { Database } from "../client";
import { pendingSignOuts } from "../schema";

/** The oldest `limit` users waiting to be signed out. */
export function findPendingSignOuts(db: Database, limit: number) {
  return db
    .select({ userId: pendingSignOuts.userId })
    .from(pendingSignOuts)
    .orderBy(asc(pendingSignOuts.requested))
    .limit(limit);
}

/**
 * The user is signed out everywhere: a status change recorded until this statement runs (by the
 * trigger, in this very batch too) waits no more. One recorded after it stays for the job.
 */
export function settlePendingSignOut(db: Database, userId: number) {
  return db
    .delete(pendingSignOuts)
    .where(and(eq(pendingSignOuts.userId, userId), lte(pendingSignOuts.requested, sql`unixepoch()`)));
}
