/** A user's phone number change and its code (docs/management.md "Changing a phone number"). */
import { and, eq, gt, lt, sql } from "drizzle-orm";
import type { Database } from "../client";
import { phoneVerifications, userPhoneNumbers, users } from "../schema";

export type PhoneVerification = typeof phoneVerifications.$inferInsert;

/** The change waiting for `userId`'s code, replacing an earlier one (its code ends with it). */
export function startPhoneVerification(db: Database, verification: PhoneVerification) {
  const { userId, ...rest } = verification;
  return db
    .insert(phoneVerifications)
    .values({ ...verification, attempts: 0 })
    .onConflictDoUpdate({ target: phoneVerifications.userId, set: { ...rest, attempts: 0 } });
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

/** Ends the user's change (its code used, or withdrawn). */
export function endPhoneVerification(db: Database, userId: number) {
  return db.delete(phoneVerifications).where(eq(phoneVerifications.userId, userId));
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

/** Removes the user's unverified numbers but `keep`: only the newest change waits. */
export function dropUnconfirmedPhones(db: Database, userId: number, keep: string) {
  return db
    .delete(userPhoneNumbers)
    .where(
      and(
        eq(userPhoneNumbers.userId, userId),
        eq(userPhoneNumbers.primary, false),
        eq(userPhoneNumbers.verified, false),
        sql`${userPhoneNumbers.value} <> ${keep}`,
      ),
    );
}

/**
 * The number, proved by its code, becomes the user's verified primary number; the old primary
 * stays as a secondary one. Written only while the user is not blocked, inactive or deleted.
 */
export function makePrimaryPhone(db: Database, userId: number, phoneNumber: string, now: number) {
  const userMayChange = sql`(SELECT ${users.status} FROM ${users} WHERE ${users.id} = ${userId}) >= 0`;
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
