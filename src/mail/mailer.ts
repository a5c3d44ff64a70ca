/**
 * The one way the service sends mail, and its record in the mail history (GET /api/2/mail).
 *
 * - With `MAIL_API_URL` (and `MAIL_API_KEY`) set, a message is posted as JSON to that HTTP e-mail
 *   API (`{from, to, subject, text}`, `Authorization: Bearer <key>`); any 2xx is "sent".
 * - Without it, in development (and tests), the message is printed to the console: that is how a
 *   developer opens a sign-in link locally.
 * - Without it anywhere else, nothing is sent and the failure is recorded: a link must never end
 *   up in a deployed Worker's logs.
 *
 * Every mail gets a row and a `sent` or `failed` event in one batch, whatever the provider said,
 * so a failure is never lost; the caller decides what to answer, never a 500. A mail that went
 * out is answered as sent whatever its record meets (docs/reliability.md): the record is a D1
 * write, tried once like any other, and one that fails leaves that mail out of the history.
 */
import type { BatchItem } from "drizzle-orm/batch";
import type { Database } from "../db/client";
import { mailRecord } from "../db/queries/mails";
import type { Bindings } from "../env";
import { loggable, platformFaultOf } from "../errors";
import { CALL_DEADLINE_MS } from "../platform/calls";
import { randomToken } from "../security/random-token";

export type Message = {
  template: string;
  /** The client the mail is sent for: only it sees the mail in its user's history. */
  clientId: string;
  to: { email: string; name: string | null; userId: number | null };
  subject: string;
  text: string;
};

/**
 * What else the mail's record writes, in its batch, by whether the mail went out: the sender's own
 * state (a sign-in link marked mailed, or withdrawn).
 */
export type RecordedWith = { whenSent: BatchItem<"sqlite">[]; whenFailed: BatchItem<"sqlite">[] };

const SENDER = { name: "Accounts", email: "no-reply@accounts.example.com" };
/** How long a provider has to answer before the mail counts as failed. */
const PROVIDER_TIMEOUT_MS = 10_000;
/** The longest sendMail takes: the provider's time, and the record's. */
export const MAIL_SENDING_SECONDS = Math.ceil((PROVIDER_TIMEOUT_MS + CALL_DEADLINE_MS) / 1000);

type Delivery = { sent: true } | { sent: false; reason: string };

/**
 * Sends the message and records it (with `recordedWith`); answers whether it went out. Once the
 * mail is out nothing throws: a record that fails is logged.
 */
export async function sendMail(
  env: Bindings,
  db: Database,
  message: Message,
  now: number,
  recordedWith: RecordedWith,
): Promise<boolean> {
  const from = { name: SENDER.name, email: env.MAIL_FROM ?? SENDER.email };
  const delivery = await deliver(env, from, message);
  if (!delivery.sent) console.warn(`mail ${message.template} not sent: ${delivery.reason}`);
  const mail = {
    userId: message.to.userId,
    clientId: message.clientId,
    template: message.template,
    senderName: from.name,
    senderEmail: from.email,
    userName: message.to.name,
    userEmail: message.to.email,
    created: now,
    // The mail's own id in the history; never the sign-in token the mail carries.
    token: randomToken(16),
  };
  try {
    await db.batch([
      ...mailRecord(db, mail, delivery.sent ? "sent" : "failed"),
      ...(delivery.sent ? recordedWith.whenSent : recordedWith.whenFailed),
    ]);
  } catch (err) {
    if (!delivery.sent) throw err;
    // The mail is out: its answer is "sent", or a retry would mail again. A platform fault was
    // logged where it happened; what this one cost is said here, and a bug's stack.
    const notRecorded = `mail ${message.template} sent but not recorded`;
    console.error(platformFaultOf(err) ? notRecorded : `${notRecorded}: ${loggable(err)}`);
  }
  return delivery.sent;
}

async function deliver(env: Bindings, from: { name: string; email: string }, message: Message): Promise<Delivery> {
  const { MAIL_API_URL: url, MAIL_API_KEY: key, ENVIRONMENT } = env;
  if (!url) {
    if (ENVIRONMENT !== "development") return { sent: false, reason: "no mail provider is configured" };
    console.log(`\n--- mail to ${message.to.email}: ${message.subject}\n${message.text}\n---\n`);
    return { sent: true };
  }
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", ...(key && { Authorization: `Bearer ${key}` }) },
      body: JSON.stringify({
        from: `${from.name} <${from.email}>`,
        to: message.to.email,
        subject: message.subject,
        text: message.text,
      }),
      signal: AbortSignal.timeout(PROVIDER_TIMEOUT_MS),
    });
    await response.body?.cancel();
    return response.ok ? { sent: true } : { sent: false, reason: `the provider answered ${response.status}` };
  } catch (err) {
    return { sent: false, reason: `the provider could not be reached (${(err as Error).name})` };
  }
}
