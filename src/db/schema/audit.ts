/**
 * The audit trail (docs/management.md "Audit trail"): one row per management write, sign-in,
 * revocation and consent change, written in the same D1 batch as what it records. Each row keeps
 * the merchant whose trail it is in (the acting client's), so that it moves with the merchant's
 * shard; rows name people and clients by id only, and `detail` holds field names and value-set
 * values, never a secret or a personal value (an erased user's trail says nothing about them).
 */
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** `service`: the service itself (a callback that failed every retry). */
export type AuditActor = "client" | "admin" | "operator" | "user" | "service";

export const auditEvents = sqliteTable(
  "audit_events",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    /** Unix seconds. */
    at: integer("at").notNull(),
    merchantId: integer("merchant_id").notNull(),
    /** The acting client (a management call's caller, the client signed in to). */
    clientId: text("client_id").notNull(),
    /** In what right the client acted; `user` for a user's own token or sign-in. */
    actor: text("actor").$type<AuditActor>().notNull(),
    /** What happened: `user.status`, `user.logout`, `signin.failure`, ... (docs/management.md). */
    action: text("action").notNull(),
    /** The user it concerns, if any. */
    userId: integer("user_id"),
    /** The client it concerns when another than the acting one (a connection withdrawn there). */
    targetClientId: text("target_client_id"),
    /** The caller's address (CF-Connecting-IP). */
    ip: text("ip"),
    /** What changed: field names, statuses, counts; never secrets or personal values. */
    detail: text("detail", { mode: "json" }).$type<Record<string, unknown>>(),
  },
  (t) => [
    index("audit_events_merchant_idx").on(t.merchantId, t.id),
    index("audit_events_merchant_user_idx").on(t.merchantId, t.userId, t.id),
    index("audit_events_merchant_client_idx").on(t.merchantId, t.clientId, t.id),
    index("audit_events_user_idx").on(t.userId, t.id),
    index("audit_events_at_idx").on(t.at),
  ],
);
