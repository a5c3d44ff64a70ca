import { and, eq, isNull } from "drizzle-orm";
import type { Database } from "../client";
import { refreshTokens, users } from "../schema";

export type RefreshTokenRecord = typeof refreshTokens.$inferSelect;

export function insertRefreshToken(db: Database, token: typeof refreshTokens.$inferInsert) {
  return db.insert(refreshTokens).values(token);
}

export function findRefreshToken(db: Database, tokenHash: string): Promise<RefreshTokenRecord | undefined> {
  return db.select().from(refreshTokens).where(eq(refreshTokens.tokenHash, tokenHash)).get();
}

/** The token with its user's status (null when the user is gone), in one read for the refresh grant. */
export function findRefreshTokenForRotation(db: Database, tokenHash: string) {
  return db
    .select({ token: refreshTokens, userStatus: users.status })
    .from(refreshTokens)
    .leftJoin(users, eq(users.id, refreshTokens.userId))
    .where(eq(refreshTokens.tokenHash, tokenHash))
    .get();
}

type Successor = { tokenHash: string; created: number; expires: number };

/**
 * Rotation in one batch: the presented token is marked rotated (and so revoked) if nobody revoked
 * it first, and its successor inserted in the same family as its child. False when the revocation
 * did not take, because a racing redemption revoked the token first: the caller then revokes the
 * family, this successor (never handed out) with it.
 */
export async function rotateRefreshToken(
  db: Database,
  presented: RefreshTokenRecord,
  successor: Successor,
): Promise<boolean> {
  const [rotated] = await db.batch([
    db
      .update(refreshTokens)
      .set({ revoked: successor.created, rotated: successor.created })
      .where(and(eq(refreshTokens.id, presented.id), isNull(refreshTokens.revoked))),
    insertSuccessor(db, presented, successor),
  ]);
  return rotated.meta.changes === 1;
}

/**
 * A rotation repeated within the grace window (oauth/refresh-tokens.ts), in one batch: the unused
 * successor `parent` was rotated into is revoked and `successor` inserted in its place. False
 * when no successor of `parent` was left unused and unrevoked: the caller then revokes the family,
 * this successor with it.
 */
export async function replaceUnusedSuccessor(
  db: Database,
  parent: RefreshTokenRecord,
  successor: Successor,
): Promise<boolean> {
  const [replaced] = await db.batch([
    db
      .update(refreshTokens)
      .set({ revoked: successor.created })
      // The family's index finds the parent's children (parent_id has no index of its own).
      .where(
        and(
          eq(refreshTokens.family, parent.family),
          eq(refreshTokens.parentId, parent.id),
          isNull(refreshTokens.revoked),
        ),
      ),
    insertSuccessor(db, parent, successor),
  ]);
  return replaced.meta.changes > 0;
}

function insertSuccessor(db: Database, parent: RefreshTokenRecord, successor: Successor) {
  return insertRefreshToken(db, {
    tokenHash: successor.tokenHash,
    created: successor.created,
    expires: successor.expires,
    clientId: parent.clientId,
    userId: parent.userId,
    scope: parent.scope,
    family: parent.family,
    parentId: parent.id,
  });
}

/** Reuse of a rotated token (RFC 9700 §4.14.2): every token of its family stops working. */
export function revokeRefreshTokenFamily(db: Database, family: string, now: number) {
  return db
    .update(refreshTokens)
    .set({ revoked: now })
    .where(and(eq(refreshTokens.family, family), isNull(refreshTokens.revoked)));
}
