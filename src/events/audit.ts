/**
 * The audit trail's writer (docs/management.md "Audit trail"): an entry is a statement for the
 * batch of the write it records, so the two land together or not at all.
 */
import type { Context } from "hono";
import { insertAuditEvent } from "../db/queries/audit";
import type { AuditActor } from "../db/schema";
import type { AppEnv } from "../env";
import { clientIp } from "../http/ip";

/** Who acted: the client, in which right, and the merchant whose trail the entry is in. */
export type Actor = { actor: AuditActor; clientId: string; merchantId: number };

export type AuditRecord = {
  /** `user.status`, `user.logout`, `user.connection.withdraw`, ... (docs/management.md). */
  action: string;
  userId?: number;
  targetClientId?: string;
  /** Field names, statuses and counts; never a secret or a personal value. */
  detail?: Record<string, unknown>;
};

export function auditEntry(c: Context<AppEnv>, by: Actor, record: AuditRecord, now: number) {
  return insertAuditEvent(c.get("db")(), {
    at: now,
    merchantId: by.merchantId,
    clientId: by.clientId,
    actor: by.actor,
    action: record.action,
    userId: record.userId ?? null,
    targetClientId: record.targetClientId ?? null,
    ip: clientIp(c.req.raw),
    detail: record.detail ?? null,
  });
}
