/** The sign-outs a status change left for the sign-out job (db/schema/sign-in.ts `pendingSignOuts`). */
import { and, asc, eq, lte } from "drizzle-orm";
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
 * The job signed the user out, reading their grants from `since` on: a status change recorded
 * until then waits no more. One recorded later (the user let in and refused again meanwhile)
 * stays for the next run.
 */
export function settlePendingSignOut(db: Database, userId: number, since: number) {
  return db
    .delete(pendingSignOuts)
    .where(and(eq(pendingSignOuts.userId, userId), lte(pendingSignOuts.requested, since)));
}
