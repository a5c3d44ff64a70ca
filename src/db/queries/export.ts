/**
 * Everything held about a user at a merchant's clients, or at every client when `merchantId` is
 * null (GDPR art. 15 and 20; docs/management.md "Export"), in one round trip, each part by an
 * index that starts with the user.
 */
import { and, asc, eq } from "drizzle-orm";
import type { Database } from "../client";
import { auditEvents, deviceFingerprints, digitalContents, refreshTokens, sessions, userClients } from "../schema";
import { type ClientScope, inClientScope } from "./clients";

export async function findUserRecords(db: Database, userId: number, merchantId: number | null) {
  const scope: ClientScope = merchantId === null ? null : { merchantId };
  const [connections, browserSessions, grants, devices, contents, audit] = await db.batch([
    db
      .select({ clientId: userClients.clientId, merchantId: userClients.merchantId, created: userClients.created })
      .from(userClients)
      .where(and(eq(userClients.userId, userId), inClientScope(db, userClients.clientId, scope))),
    db
      .select({
        clientId: sessions.clientId,
        created: sessions.created,
        expires: sessions.expires,
        revoked: sessions.revoked,
        method: sessions.method,
      })
      .from(sessions)
      .where(and(eq(sessions.userId, userId), inClientScope(db, sessions.clientId, scope))),
    db
      .select({
        clientId: refreshTokens.clientId,
        scope: refreshTokens.scope,
        created: refreshTokens.created,
        expires: refreshTokens.expires,
        revoked: refreshTokens.revoked,
      })
      .from(refreshTokens)
      .where(and(eq(refreshTokens.userId, userId), inClientScope(db, refreshTokens.clientId, scope)))
      .orderBy(asc(refreshTokens.clientId), asc(refreshTokens.id)),
    db
      .select({
        clientId: deviceFingerprints.clientId,
        platform: deviceFingerprints.platform,
        applicationName: deviceFingerprints.applicationName,
        applicationVersion: deviceFingerprints.applicationVersion,
        created: deviceFingerprints.created,
      })
      .from(deviceFingerprints)
      .where(and(eq(deviceFingerprints.userId, userId), inClientScope(db, deviceFingerprints.clientId, scope))),
    db
      .select()
      .from(digitalContents)
      .where(and(eq(digitalContents.userId, userId), inClientScope(db, digitalContents.clientId, scope))),
    db
      .select()
      .from(auditEvents)
      .where(
        and(eq(auditEvents.userId, userId), merchantId === null ? undefined : eq(auditEvents.merchantId, merchantId)),
      )
      .orderBy(asc(auditEvents.id)),
  ]);
  return { connections, sessions: browserSessions, grants, devices, digitalContents: contents, audit };
}
