import { and, eq, gt, gte, isNull } from "drizzle-orm";
import type { Database } from "../client";
import { type ClientScope, inClientScope } from "./clients";
import { clients, sessions, totpFactors, users } from "../schema";

export function insertSession(db: Database, session: typeof sessions.$inferInsert) {
  return db.insert(sessions).values(session);
}

export function revokeSession(db: Database, idHash: string, now: number) {
  return db
    .update(sessions)
    .set({ revoked: now })
    .where(and(eq(sessions.idHash, idHash), isNull(sessions.revoked)));
}

/**
 * A live session: its user, the merchant of the client it was started through (null once that
 * client is gone), and when and how the user signed in.
 */
export type LiveSession = {
  userId: number;
  /** The client the session was started through; null once that client is gone. */
  clientId: string | null;
  merchantId: number | null;
  created: number;
  method: (typeof sessions.$inferSelect)["method"];
  /** Whether the user has a second factor, which every sign-in then takes. */
  secondFactor: boolean;
};

/** The session when it is live (not revoked, not expired) and its user's account may sign in. */
export async function findLiveSession(db: Database, idHash: string, now: number): Promise<LiveSession | undefined> {
  const row = await db
    .select({
      userId: sessions.userId,
      clientId: sessions.clientId,
      merchantId: clients.merchantId,
      created: sessions.created,
      method: sessions.method,
      factor: totpFactors.userId,
    })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .leftJoin(clients, eq(clients.id, sessions.clientId))
    .leftJoin(totpFactors, eq(totpFactors.userId, sessions.userId))
    .where(and(eq(sessions.idHash, idHash), isNull(sessions.revoked), gt(sessions.expires, now), gte(users.status, 0)))
    .get();
  if (!row) return undefined;
  const { factor, ...session } = row;
  return { ...session, secondFactor: factor !== null };
}

/** The user's live sessions started through the clients in `scope`, by the user's index. */
export function findLiveUserSessions(db: Database, userId: number, scope: ClientScope, now: number) {
  return db
    .select({ idHash: sessions.idHash })
    .from(sessions)
    .where(liveUserSessions(db, userId, scope, now));
}

export function revokeUserSessions(db: Database, userId: number, scope: ClientScope, now: number) {
  return db
    .update(sessions)
    .set({ revoked: now })
    .where(liveUserSessions(db, userId, scope, now));
}

function liveUserSessions(db: Database, userId: number, scope: ClientScope, now: number) {
  return and(
    eq(sessions.userId, userId),
    isNull(sessions.revoked),
    gt(sessions.expires, now),
    inClientScope(db, sessions.clientId, scope),
  );
}
