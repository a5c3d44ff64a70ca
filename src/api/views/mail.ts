/** The spec's Mail object: `created` and event timestamps in Unix seconds. */
import type { MailEventRecord, MailRecord } from "../../db/queries/mails";
import type { Mail } from "../../schemas/responses/mail";

export function mailView({ mail, events }: { mail: MailRecord; events: MailEventRecord[] }): Mail {
  return {
    template: mail.template,
    senderName: mail.senderName,
    senderEmail: mail.senderEmail,
    userName: mail.userName,
    userEmail: mail.userEmail,
    created: mail.created,
    token: mail.token,
    events: events.map((e) => ({ event: e.event, timestamp: e.timestamp })),
  };
}
