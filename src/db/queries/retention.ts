/**
 * The retention job's deletes (jobs/retention.ts): each removes at most `limit` rows past their
 * time, by the index on that time, so that one statement stays short however much has piled up;
 * and its copy of users' parts, as bounded.
 */
import { and, inArray, isNull, lte, sql } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Database } from "../client";
import { lastIssue } from "./refresh-tokens";
import {
  auditEvents,
  callbackChanges,
  clients,
  idempotencyKeys,
  phoneVerifications,
  refreshTokens,
  sessions,
  signinRequests,
  users,
} from "../schema";

function deleteUpTo(db: Database, table: SQLiteTable, key: SQLiteColumn, where: ReturnType<typeof and>, limit: number) {
  return db.delete(table).where(inArray(key, db.select({ key }).from(table).where(where).limit(limit)));
}

/**
 * Refresh tokens past their expiry whose grant's access tokens have all expired too (its last
 * issue plus its client's access-token lifetime): until then, sign-out everywhere finds the grant
 * by them (oauth/sign-out.ts).
 */
export function purgeRefreshTokens(db: Database, now: number, limit: number) {
  const lifetime = sql`(SELECT ${clients.accessTokenLifetime} FROM ${clients} WHERE ${clients.id} = ${refreshTokens.clientId})`;
  return deleteUpTo(
    db,
    refreshTokens,
    refreshTokens.id,
    and(lte(refreshTokens.expires, now), sql`${lastIssue(now)} + ${lifetime} <= ${now}`),
    limit,
  );
}

/** Browser sessions past their expiry, revoked or not. */
export function purgeSessions(db: Database, now: number, limit: number) {
  return deleteUpTo(db, sessions, sessions.idHash, lte(sessions.expires, now), limit);
}

/** Sign-in links' rows past their expiry (`before`: a browser's use under way may still retry). */
export function purgeSigninRequests(db: Database, before: number, limit: number) {
  return deleteUpTo(db, signinRequests, signinRequests.subject, lte(signinRequests.expires, before), limit);
}

/** Phone number changes whose code has expired (the number stays among the user's, unverified). */
export function purgePhoneVerifications(db: Database, now: number, limit: number) {
  return deleteUpTo(db, phoneVerifications, phoneVerifications.userId, lte(phoneVerifications.expires, now), limit);
}

/** Audit entries older than the retention period. */
export function purgeAuditEvents(db: Database, before: number, limit: number) {
  return deleteUpTo(db, auditEvents, auditEvents.id, lte(auditEvents.at, before), limit);
}

/** Idempotency keys older than a retry can come (jobs/retention.ts). */
export function purgeIdempotencyKeys(db: Database, before: number, limit: number) {
  // Keyed by two columns: the rows are picked by their rowid.
  const expired = sql`SELECT rowid FROM ${idempotencyKeys} WHERE ${lte(idempotencyKeys.created, before)} LIMIT ${limit}`;
  return db.delete(idempotencyKeys).where(sql`rowid IN (${expired})`);
}

/** Callback changes that failed every retry, kept for a replay until `before`. */
export function purgeFailedCallbacks(db: Database, before: number, limit: number) {
  return deleteUpTo(db, callbackChanges, callbackChanges.id, lte(callbackChanges.failed, before), limit);
}

/**
 * Has the parts of up to `limit` users from before migration 0031 copied into their rows (its
 * trigger `users_parts_on_request` writes the copy when `parts` is set to 'copy').
 */
export function copyUserParts(db: Database, limit: number) {
  const uncopied = db.select({ id: users.id }).from(users).where(isNull(users.parts)).limit(limit);
  return db
    .update(users)
    .set({ parts: sql`'copy'` })
    .where(inArray(users.id, uncopied));
}
