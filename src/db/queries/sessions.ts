import { and, eq, isNull } from "drizzle-orm";
import type { Database } from "../client";
import { sessions } from "../schema";

export function insertSession(db: Database, session: typeof sessions.$inferInsert) {
  return db.insert(sessions).values(session);
}

export function revokeSession(db: Database, idHash: string, now: number) {
  return db
    .update(sessions)
    .set({ revoked: now })
    .where(and(eq(sessions.idHash, idHash), isNull(sessions.revoked)));
}
