/**
 * Passkeys (WebAuthn discoverable credentials, docs/factors.md): each row is one credential of a
 * user's, with the client it was added through and that client's merchant.
 */
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { users } from "./users";

export const passkeys = sqliteTable(
  "passkeys",
  {
    /** The credential id, base64url. */
    id: text("id").primaryKey(),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** The credential's public key as a JWK (JSON): it verifies, and opens nothing. */
    publicKey: text("public_key").notNull(),
    /** The authenticator's signature counter; 0 for one that keeps none. */
    counter: integer("counter").notNull().default(0),
    /** Backup eligible: a passkey that syncs (set once, at registration); backed up: whether it is now. */
    backupEligible: integer("backup_eligible", { mode: "boolean" }).notNull(),
    backedUp: integer("backed_up", { mode: "boolean" }).notNull(),
    transports: text("transports", { mode: "json" }).$type<string[]>().notNull().default([]),
    /** What the user calls it. */
    name: text("name").notNull(),
    created: integer("created").notNull(),
    lastUsed: integer("last_used"),
    clientId: text("client_id").notNull(),
    merchantId: integer("merchant_id").notNull(),
  },
  (t) => [index("passkeys_user_idx").on(t.userId)],
);
