/** A user's phone number change and its code (docs/management.md "Changing a phone number"). */
import { and, count, eq, gt, inArray, lt, lte, or, sql } from "drizzle-orm";
import type { Database } from "../client";
import { phoneVerifications, userPhoneNumbers, users } from "../schema";

export type PhoneVerification = typeof phoneVerifications.$inferInsert;

/**
 * The change waiting for `userId`'s code, replacing an earlier one (its code ends with it) unless
 * that one's code was texted less than `resendAfter` seconds ago and is still live: returns the
 * row only when it was written, so that of racing changes only one texts a code.
 */
export function startPhoneVerification(db: Database, verification: PhoneVerification, resendAfter: number) {
  const { userId, ...rest } = verification;
  const now = verification.created;
  return db
    .insert(phoneVerifications)
    .values({ ...verification, attempts: 0 })
    .onConflictDoUpdate({
      target: phoneVerifications.userId,
      set: { ...rest, attempts: 0 },
      setWhere: or(lte(phoneVerifications.created, now - resendAfter), lte(phoneVerifications.expires, now)),
    })
    .returning({ userId: phoneVerifications.userId });
}

/** How many of the merchant's users were texted a code for `phoneNumber` since `since`. */
export async function codesTextedTo(db: Database, merchantId: number, phoneNumber: string, since: number) {
  const [row] = await db
    .select({ count: count() })
    .from(phoneVerifications)
    .where(
      and(
        eq(phoneVerifications.merchantId, merchantId),
        eq(phoneVerifications.phoneNumber, phoneNumber),
        gt(phoneVerifications.created, since),
      ),
    );
  return row!.count;
}

/** The user's waiting change, if any (live or not). */
export function findPhoneVerification(db: Database, userId: number) {
  return db.select().from(phoneVerifications).where(eq(phoneVerifications.userId, userId)).get();
}

/**
 * Counts an attempt at the user's live change, unless it has had `maxAttempts` already: the change
 * as it stands then, or undefined when there is none left to try.
 */
export function takePhoneAttempt(db: Database, userId: number, now: number, maxAttempts: number) {
  return db
    .update(phoneVerifications)
    .set({ attempts: sql`${phoneVerifications.attempts} + 1` })
    .where(
      and(
        eq(phoneVerifications.userId, userId),
        gt(phoneVerifications.expires, now),
        lt(phoneVerifications.attempts, maxAttempts),
      ),
    )
    .returning()
    .get();
}

/** Ends the user's change (withdrawn), or with `codeHash` only that change (its code used, or not texted). */
export function endPhoneVerification(db: Database, userId: number, codeHash?: string) {
  return db
    .delete(phoneVerifications)
    .where(
      and(
        eq(phoneVerifications.userId, userId),
        codeHash === undefined ? undefined : eq(phoneVerifications.codeHash, codeHash),
      ),
    );
}

/** The number, unverified, among the user's (added when it is not yet). */
export function addUnverifiedPhone(db: Database, userId: number, phoneNumber: string) {
  const held = sql`EXISTS (SELECT 1 FROM ${userPhoneNumbers} WHERE ${userPhoneNumbers.userId} = ${userId} AND ${userPhoneNumbers.value} = ${phoneNumber})`;
  return db.insert(userPhoneNumbers).select(
    db
      .select({
        id: sql<number>`NULL`.as("id"),
        userId: users.id,
        value: sql<string>`${phoneNumber}`.as("value"),
        type: sql<string>`'mobile'`.as("type"),
        primary: sql<boolean>`0`.as("is_primary"),
        verified: sql<boolean>`0`.as("verified"),
      })
      .from(users)
      .where(and(eq(users.id, userId), sql`NOT ${held}`)),
  );
}

/**
 * Removes the number an earlier change left unverified, unless it is `keep`: only the newest
 * change waits. Other unverified numbers (imported ones) stay. Before the batch's new change.
 */
export function dropUnconfirmedPhone(db: Database, userId: number, keep: string) {
  const waiting = db
    .select({ phoneNumber: phoneVerifications.phoneNumber })
    .from(phoneVerifications)
    .where(eq(phoneVerifications.userId, userId));
  return db
    .delete(userPhoneNumbers)
    .where(
      and(
        eq(userPhoneNumbers.userId, userId),
        eq(userPhoneNumbers.primary, false),
        eq(userPhoneNumbers.verified, false),
        sql`${userPhoneNumbers.value} <> ${keep}`,
        inArray(userPhoneNumbers.value, waiting),
      ),
    );
}

/**
 * The number, proved by its code, becomes the user's verified primary number; the old primary
 * stays as a secondary one. Written only while the change `codeHash` still waits (not replaced by
 * a newer one meanwhile) and the user is not blocked, inactive or deleted: before the batch ends it.
 */
export function makePrimaryPhone(db: Database, userId: number, phoneNumber: string, codeHash: string, now: number) {
  const userMayChange = and(
    sql`(SELECT ${users.status} FROM ${users} WHERE ${users.id} = ${userId}) >= 0`,
    sql`EXISTS (SELECT 1 FROM ${phoneVerifications} WHERE ${phoneVerifications.userId} = ${userId} AND ${phoneVerifications.codeHash} = ${codeHash})`,
  );
  return [
    db
      .update(userPhoneNumbers)
      .set({
        primary: sql`${userPhoneNumbers.value} = ${phoneNumber}`,
        verified: sql`${userPhoneNumbers.verified} OR ${userPhoneNumbers.value} = ${phoneNumber}`,
      })
      .where(and(eq(userPhoneNumbers.userId, userId), userMayChange)),
    db
      .update(users)
      .set({ phoneNumber, phoneNumberVerified: now, updated: now })
      .where(and(eq(users.id, userId), userMayChange)),
  ] as const;
}
