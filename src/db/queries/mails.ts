import { and, desc, eq, inArray, isNull, type SQL, sql } from "drizzle-orm";
import type { Database } from "../client";
import { type ClientScope, inClientScope } from "./clients";
import { mailEvents, mails, userClients, userEmails, users } from "../schema";

export type MailRecord = typeof mails.$inferSelect;
export type MailEventRecord = typeof mailEvents.$inferSelect;

/** Who a mail search is about: a userId, a uuid, or any e-mail address of the user. */
export type MailOwner = { userId?: number; uuid?: string; email?: string };

/**
 * The user the owner names, if the client may see them: only users connected to the client.
 * Every given part must name the same user.
 */
export async function findVisibleMailOwner(db: Database, clientId: string, owner: MailOwner) {
  const conditions = [
    eq(userClients.clientId, clientId),
    owner.userId === undefined ? undefined : eq(users.id, owner.userId),
    owner.uuid === undefined ? undefined : eq(users.uuid, owner.uuid),
    owner.email === undefined
      ? undefined
      : inArray(
          users.id,
          db.select({ id: userEmails.userId }).from(userEmails).where(eq(userEmails.value, owner.email)),
        ),
  ];
  const row = await db
    .select({ id: users.id })
    .from(users)
    .innerJoin(userClients, eq(userClients.userId, users.id))
    .where(and(...conditions))
    .get();
  return row?.id;
}

/** A user's most recent mails (at most `limit`) sent for the clients in `scope` (every mail when null). */
export function userMails(db: Database, userId: number, limit: number, scope: ClientScope) {
  return db
    .select()
    .from(mails)
    .where(and(eq(mails.userId, userId), inClientScope(db, mails.clientId, scope)))
    .orderBy(desc(mails.created), desc(mails.id))
    .limit(limit);
}

/** Those mails with their events, in one round trip. */
export async function listMails(db: Database, userId: number, limit: number, scope: ClientScope) {
  const recent = db.select({ id: sql<number>`id` }).from(userMails(db, userId, limit, scope).as("recent"));
  const [found, events] = await db.batch([
    userMails(db, userId, limit, scope),
    db
      .select()
      .from(mailEvents)
      .where(inArray(mailEvents.mailId, recent))
      .orderBy(mailEvents.mailId, mailEvents.timestamp, mailEvents.id),
  ]);
  const eventsByMail = Map.groupBy(events, (event) => event.mailId);
  return found.map((mail) => ({ mail, events: eventsByMail.get(mail.id) ?? [] }));
}

/**
 * A mail and its first event, as batch statements: the event finds its mail by the mail's token
 * (unique), as a batch hands no id from one statement to the next.
 */
export function mailRecord(db: Database, mail: typeof mails.$inferInsert, event: string) {
  return [
    db.insert(mails).values(mail),
    db.insert(mailEvents).select(
      db
        .select({
          id: sql<number>`NULL`.as("id"),
          mailId: mails.id,
          event: sql<string>`${event}`.as("event"),
          timestamp: sql<number>`${mail.created}`.as("timestamp"),
        })
        .from(mails)
        .where(eq(mails.token, mail.token)),
    ),
  ] as const;
}

/** Gives the mails sent to an address before it had a user to that user (sign-in by link). */
export function claimUnownedMails(db: Database, userId: number | SQL<number>, email: string) {
  return db
    .update(mails)
    .set({ userId })
    .where(and(isNull(mails.userId), eq(mails.userEmail, email)));
}
