/** An audit trail entry as the API shows it (docs/management.md "Audit trail"). */
import type { AuditEventRecord } from "../../db/queries/audit";
import { formatDatetime } from "../../http/datetime";

export function auditEventView(event: AuditEventRecord) {
  return {
    id: String(event.id),
    time: formatDatetime(event.at),
    merchantId: event.merchantId,
    clientId: event.clientId,
    actor: event.actor,
    action: event.action,
    userId: event.userId === null ? null : String(event.userId),
    targetClientId: event.targetClientId,
    ip: event.ip,
    detail: event.detail,
  };
}
