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

/**
 * Rotation in one batch: the presented token is revoked if nobody did so first, and its successor
 * inserted in the same family. False when the revocation did not take, because a racing
 * redemption revoked the token first: the caller then revokes the family, this successor (never
 * handed out) with it.
 */
export async function rotateRefreshToken(
  db: Database,
  presented: RefreshTokenRecord,
  successor: { tokenHash: string; created: number; expires: number },
): Promise<boolean> {
  const [revoked] = await db.batch([
    db
      .update(refreshTokens)
      .set({ revoked: successor.created })
      .where(and(eq(refreshTokens.id, presented.id), isNull(refreshTokens.revoked))),
    insertRefreshToken(db, {
      tokenHash: successor.tokenHash,
      created: successor.created,
      expires: successor.expires,
      clientId: presented.clientId,
      userId: presented.userId,
      scope: presented.scope,
      family: presented.family,
    }),
  ]);
  return revoked.meta.changes === 1;
}

/** Reuse of a rotated token (RFC 9700 §4.14.2): every token of its family stops working. */
export function revokeRefreshTokenFamily(db: Database, family: string, now: number) {
  return db
    .update(refreshTokens)
    .set({ revoked: now })
    .where(and(eq(refreshTokens.family, family), isNull(refreshTokens.revoked)));
}
