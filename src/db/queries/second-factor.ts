/** A user's second factor: the TOTP authenticator and its recovery codes (oauth/factors). */
import { and, eq, isNull, lt } from "drizzle-orm";
import type { Database } from "../client";
import { recoveryCodes, sessions, totpFactors } from "../schema";
import type { SignInMethod } from "../schema";

export type TotpFactor = { secretSealed: string; lastStep: number };

export function findTotpFactor(db: Database, userId: number): Promise<TotpFactor | undefined> {
  return db
    .select({ secretSealed: totpFactors.secretSealed, lastStep: totpFactors.lastStep })
    .from(totpFactors)
    .where(eq(totpFactors.userId, userId))
    .get();
}

/**
 * Takes a code of time step `step` when no code of that step or a later one was taken before: in
 * one statement, so that of two racing uses of one code only one is taken. Whether it was.
 */
export async function takeTotpStep(db: Database, userId: number, step: number): Promise<boolean> {
  const taken = await db
    .update(totpFactors)
    .set({ lastStep: step })
    .where(and(eq(totpFactors.userId, userId), lt(totpFactors.lastStep, step)))
    .returning({ userId: totpFactors.userId });
  return taken.length === 1;
}

/** Uses the unused recovery code `codeHash`, in one statement; whether it was one. */
export async function useRecoveryCode(db: Database, userId: number, codeHash: string, now: number): Promise<boolean> {
  const used = await db
    .update(recoveryCodes)
    .set({ used: now })
    .where(and(eq(recoveryCodes.userId, userId), eq(recoveryCodes.codeHash, codeHash), isNull(recoveryCodes.used)))
    .returning({ userId: recoveryCodes.userId });
  return used.length === 1;
}

type Enrolment = { userId: number; clientId: string; merchantId: number; created: number };

/**
 * The statement that enrols a factor; refused (UNIQUE constraint failed: totp_factors.user_id) when
 * the user has one already, which fails its whole batch.
 */
export function insertTotpFactor(db: Database, enrolment: Enrolment & { secretSealed: string; lastStep: number }) {
  return db.insert(totpFactors).values(enrolment);
}

/** Replaces the user's recovery codes by `codeHashes`: the statements, for the batch that enrols or renews. */
export function replaceRecoveryCodes(db: Database, enrolment: Enrolment, codeHashes: string[]) {
  return [
    db.delete(recoveryCodes).where(eq(recoveryCodes.userId, enrolment.userId)),
    db.insert(recoveryCodes).values(codeHashes.map((codeHash) => ({ ...enrolment, codeHash }))),
  ] as const;
}

/** Removes the user's second factor and its recovery codes. */
export function deleteSecondFactor(db: Database, userId: number) {
  return [
    db.delete(totpFactors).where(eq(totpFactors.userId, userId)),
    db.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId)),
  ] as const;
}

/** Records on the browser session `idHash` that its sign-in now has a second factor. */
export function raiseSessionMethod(db: Database, idHash: string, method: SignInMethod) {
  return db.update(sessions).set({ method }).where(eq(sessions.idHash, idHash));
}

/** A fresh sign-in on the account page: the session's sign-in becomes `method`, now. */
export function reauthenticateSession(db: Database, idHash: string, method: SignInMethod, now: number) {
  return db.update(sessions).set({ method, created: now }).where(eq(sessions.idHash, idHash));
}
