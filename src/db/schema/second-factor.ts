/**
 * A user's second factor (docs/factors.md): one TOTP authenticator (RFC 6238) and its ten
 * recovery codes. Each row names the client the user enrolled through, and its merchant.
 */
import { integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { users } from "./users";

export const totpFactors = sqliteTable("totp_factors", {
  userId: integer("user_id")
    .primaryKey()
    .references(() => users.id, { onDelete: "cascade" }),
  /** The shared secret, sealed under the data-protection key: it must be read back to check a code. */
  secretSealed: text("secret_sealed").notNull(),
  /** The last time step a code was taken for: a code of this step or an earlier one is a replay. */
  lastStep: integer("last_step").notNull().default(0),
  created: integer("created").notNull(),
  clientId: text("client_id").notNull(),
  merchantId: integer("merchant_id").notNull(),
});

export const recoveryCodes = sqliteTable(
  "recovery_codes",
  {
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** SHA-256 of the user and the code (oauth/factors/recovery-codes.ts); the code itself is shown once. */
    codeHash: text("code_hash").notNull(),
    /** When it was used; a used code is kept so that the count of those left can be shown. */
    used: integer("used"),
    created: integer("created").notNull(),
    clientId: text("client_id").notNull(),
    merchantId: integer("merchant_id").notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.codeHash] })],
);
