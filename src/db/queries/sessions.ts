import { and, eq, gt, gte, isNull } from "drizzle-orm";
import type { Database } from "../client";
import { sessions, users } from "../schema";

export function insertSession(db: Database, session: typeof sessions.$inferInsert) {
  return db.insert(sessions).values(session);
}

export function revokeSession(db: Database, idHash: string, now: number) {
  return db
    .update(sessions)
    .set({ revoked: now })
    .where(and(eq(sessions.idHash, idHash), isNull(sessions.revoked)));
}

/** The user of a session that is live (not revoked, not expired) and whose account may sign in. */
export async function findLiveSessionUser(db: Database, idHash: string, now: number): Promise<number | undefined> {
  const row = await db
    .select({ userId: sessions.userId })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .where(and(eq(sessions.idHash, idHash), isNull(sessions.revoked), gt(sessions.expires, now), gte(users.status, 0)))
    .get();
  return row?.userId;
}
