/** A user's export (docs/management.md "Export"): datetimes as the API writes them, never a token or a hash. */
import type { findUserRecords } from "../../db/queries/export";
import type { MailEventRecord, MailRecord } from "../../db/queries/mails";
import type { UserProfile } from "../../db/queries/users";
import { datetimeOrFalse, formatDatetime } from "../../http/datetime";
import { auditEventView } from "./audit-event";
import { digitalContentView } from "./digital-content";
import { mailView } from "./mail";
import { userView } from "./user";

type Held = Awaited<ReturnType<typeof findUserRecords>>;

export function userExportView(
  profile: UserProfile,
  held: Held,
  mails: { mail: MailRecord; events: MailEventRecord[] }[],
) {
  return {
    user: userView(profile),
    connections: held.connections.map((c) => ({ ...c, created: formatDatetime(c.created) })),
    sessions: held.sessions.map((s) => ({
      ...s,
      created: formatDatetime(s.created),
      expires: formatDatetime(s.expires),
      revoked: datetimeOrFalse(s.revoked),
    })),
    grants: held.grants.map((g) => ({
      ...g,
      created: formatDatetime(g.created),
      expires: formatDatetime(g.expires),
      revoked: datetimeOrFalse(g.revoked),
    })),
    devices: held.devices.map((d) => ({ ...d, created: formatDatetime(d.created) })),
    digitalContents: held.digitalContents.map(digitalContentView),
    mails: mails.map(mailView),
    audit: held.audit.map(auditEventView),
  };
}
