/** The devices users registered through a client (POST /api/2/devices), by fingerprint. */
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { clients } from "./merchants-and-clients";
import { now } from "./now";
import { users } from "./users";

export const deviceFingerprints = sqliteTable(
  "device_fingerprints",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    /** SHA-256 of device id, unified platform name and application name. */
    hash: text("hash").notNull(),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    clientId: text("client_id")
      .notNull()
      .references(() => clients.id, { onDelete: "cascade" }),
    platform: text("platform").notNull(),
    applicationName: text("application_name").notNull(),
    applicationVersion: text("application_version"),
    created: integer("created").notNull().default(now),
  },
  (t) => [
    uniqueIndex("device_fingerprints_user_hash_idx").on(t.userId, t.hash),
    index("device_fingerprints_client_idx").on(t.clientId),
  ],
);
