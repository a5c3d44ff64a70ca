/**
 * Erasing a user (GDPR art. 17; docs/management.md "Erasure"): the statements of one batch that
 * remove the user's personal data and keep the account as a deleted one (status -3, `published`
 * false in the User object), under the same userId and uuid, so that clients can match it.
 */
import { and, eq, inArray, isNull, or, sql } from "drizzle-orm";
import type { Database } from "../client";
import { deleteUserPasskeys } from "./passkeys";
import { isSelfContainedGrant } from "./refresh-tokens";
import { jsonValues } from "./users";
import { deleteSecondFactor } from "./second-factor";
import { USER_STATUS } from "../../schemas/value-sets";
import {
  auditEvents,
  deviceFingerprints,
  mails,
  refreshTokens,
  sessions,
  signinRequests,
  userAccounts,
  userAddresses,
  userEmails,
  phoneVerifications,
  userPhoneNumbers,
  users,
} from "../schema";

export function eraseUser(db: Database, userId: number, now: number, endedSelfContained: readonly string[]) {
  const addresses = db.select({ value: userEmails.value }).from(userEmails).where(eq(userEmails.userId, userId));
  return [
    // Before the addresses go: mails to any of them, the user's or not yet anyone's, go with them.
    db
      .delete(mails)
      .where(or(eq(mails.userId, userId), and(isNull(mails.userId), inArray(mails.userEmail, addresses)))),
    db.delete(signinRequests).where(
      or(
        eq(signinRequests.subject, `user:${userId}`),
        inArray(
          signinRequests.subject,
          db
            .select({ subject: sql<string>`'email:' || ${userEmails.value}` })
            .from(userEmails)
            .where(eq(userEmails.userId, userId)),
        ),
      ),
    ),
    db.delete(userEmails).where(eq(userEmails.userId, userId)),
    db.delete(userPhoneNumbers).where(eq(userPhoneNumbers.userId, userId)),
    db.delete(phoneVerifications).where(eq(phoneVerifications.userId, userId)),
    ...deleteSecondFactor(db, userId),
    deleteUserPasskeys(db, userId),
    db.delete(userAddresses).where(eq(userAddresses.userId, userId)),
    db.delete(userAccounts).where(eq(userAccounts.userId, userId)),
    db.delete(deviceFingerprints).where(eq(deviceFingerprints.userId, userId)),
    // A self-contained grant the caller's sign-out did not list (a sign-in racing it) stays for the
    // sign-out job to end at its Durable Object: deleted here, its tokens would never see it end.
    db
      .delete(refreshTokens)
      .where(
        and(
          eq(refreshTokens.userId, userId),
          or(sql`NOT ${isSelfContainedGrant}`, inArray(refreshTokens.family, jsonValues(endedSelfContained))),
        ),
      ),
    db.delete(sessions).where(eq(sessions.userId, userId)),
    // The trail keeps what happened, not where the person was.
    db.update(auditEvents).set({ ip: null }).where(eq(auditEvents.userId, userId)),
    db
      .update(users)
      .set({
        status: USER_STATUS.deleted,
        legacyId: null,
        passwordHash: null,
        email: null,
        emailVerified: null,
        phoneNumber: null,
        phoneNumberVerified: null,
        givenName: null,
        familyName: null,
        formattedName: null,
        displayName: null,
        preferredUsername: null,
        url: null,
        photo: null,
        gender: "undisclosed",
        birthday: "0000-00-00",
        locale: null,
        utcOffset: null,
        tracking: false,
        lastLoggedIn: null,
        lastAuthenticated: null,
        familyNameKey: null,
        givenNameKey: null,
        displayNameKey: null,
        preferredUsernameKey: null,
        updated: now,
      })
      .where(eq(users.id, userId)),
  ] as const;
}
