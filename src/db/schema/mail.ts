/** Mails sent to users (or to addresses no user has yet) and their delivery events. */
import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { clients } from "./merchants-and-clients";
import { users } from "./users";

export const mails = sqliteTable(
  "mails",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    /** Null for a mail to an address no user has yet (a sign-in link); set when one signs in with it. */
    userId: integer("user_id").references(() => users.id, { onDelete: "cascade" }),
    /**
     * The client the mail was sent for (a sign-in link's, an imported mail's `clientId`): only it
     * sees the mail in GET /api/2/mail. Null for a mail imported without one: the operator's export alone shows it.
     */
    clientId: text("client_id").references(() => clients.id, { onDelete: "set null" }),
    template: text("template").notNull(),
    senderName: text("sender_name"),
    senderEmail: text("sender_email").notNull(),
    userName: text("user_name"),
    userEmail: text("user_email").notNull(),
    created: integer("created").notNull(),
    /** The e-mail token; unique, so re-importing a mail updates it. */
    token: text("token").notNull(),
  },
  (t) => [
    uniqueIndex("mails_token_idx").on(t.token),
    index("mails_user_created_idx").on(t.userId, t.created),
    /** A user's mails of one client, newest first: GET /api/2/mail. */
    index("mails_user_client_created_idx").on(t.userId, t.clientId, t.created),
    index("mails_unowned_email_idx")
      .on(t.userEmail)
      .where(sql`${t.userId} IS NULL`),
  ],
);

export const mailEvents = sqliteTable(
  "mail_events",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    mailId: integer("mail_id")
      .notNull()
      .references(() => mails.id, { onDelete: "cascade" }),
    event: text("event").notNull(),
    timestamp: integer("timestamp").notNull(),
  },
  (t) => [index("mail_events_mail_idx").on(t.mailId, t.timestamp)],
);
