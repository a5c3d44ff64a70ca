import { and, desc, eq, gte, lte, type SQL } from "drizzle-orm";
import type { SQLiteInsertValue } from "drizzle-orm/sqlite-core";
import type { Database } from "../client";
import { auditEvents } from "../schema";

export type AuditEventRecord = typeof auditEvents.$inferSelect;

export function insertAuditEvent(db: Database, event: SQLiteInsertValue<typeof auditEvents>) {
  return db.insert(auditEvents).values(event);
}

/** Which entries a read selects: a merchant's (null: every merchant's, for the operator), narrowed. */
export type AuditFilter = {
  merchantId: number | null;
  userId?: number | undefined;
  clientId?: string | undefined;
  action?: string | undefined;
  since: number | null;
  until: number | null;
};

/**
 * A page of entries, newest first. Each filter has its index: the merchant's trail, by user, by
 * client (audit_events_merchant_*), and a user's across merchants for the operator.
 */
export function listAuditEvents(db: Database, filter: AuditFilter, page: { limit: number; offset: number }) {
  const conditions: (SQL | undefined)[] = [
    filter.merchantId === null ? undefined : eq(auditEvents.merchantId, filter.merchantId),
    filter.userId === undefined ? undefined : eq(auditEvents.userId, filter.userId),
    filter.clientId === undefined ? undefined : eq(auditEvents.clientId, filter.clientId),
    filter.action === undefined ? undefined : eq(auditEvents.action, filter.action),
    filter.since === null ? undefined : gte(auditEvents.at, filter.since),
    filter.until === null ? undefined : lte(auditEvents.at, filter.until),
  ];
  return db
    .select()
    .from(auditEvents)
    .where(and(...conditions))
    .orderBy(desc(auditEvents.id))
    .limit(page.limit)
    .offset(page.offset);
}
