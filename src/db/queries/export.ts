/**
 * Everything held about a user at the clients in `scope`: one client, a merchant's, or every one
 * (GDPR art. 15 and 20; docs/management.md "Export"), in one round trip, each part by an index
 * that starts with the user.
 */
import { and, desc, eq } from "drizzle-orm";
import type { Database } from "../client";
import { auditEvents, deviceFingerprints, digitalContents, refreshTokens, sessions, userClients } from "../schema";
import { type ClientScope, inClientScope } from "./clients";

/** The most rows of each growing list (sessions, grants, audit entries) an export carries, newest first. */
const MAX_EXPORTED_ROWS = 1_000;

export async function findUserRecords(db: Database, userId: number, scope: ClientScope) {
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
      .where(and(eq(sessions.userId, userId), inClientScope(db, sessions.clientId, scope)))
      .orderBy(desc(sessions.created))
      .limit(MAX_EXPORTED_ROWS),
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
      .orderBy(desc(refreshTokens.id))
      .limit(MAX_EXPORTED_ROWS),
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
      .where(and(eq(auditEvents.userId, userId), auditScope(scope)))
      .orderBy(desc(auditEvents.id))
      .limit(MAX_EXPORTED_ROWS),
  ]);
  return { connections, sessions: browserSessions, grants, devices, digitalContents: contents, audit };
}

/** A scope's audit entries: those of its merchant, or those its one client made. */
function auditScope(scope: ClientScope) {
  if (scope === null) return undefined;
  return "merchantId" in scope
    ? eq(auditEvents.merchantId, scope.merchantId)
    : eq(auditEvents.clientId, scope.clientId);
}
