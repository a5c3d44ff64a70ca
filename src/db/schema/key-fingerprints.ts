import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { now } from "./now";

/** The secrets whose fingerprints key_fingerprints keeps. */
export type FingerprintedSecret = "DATA_PROTECTION_KEY";

/**
 * Fingerprints of the secrets the stored data depends on (security/data-protection.ts
 * keyFingerprint), by secret name: today only DATA_PROTECTION_KEY, under which client secrets and
 * refresh tokens are hashed and signing secrets sealed. The first import records it; an import
 * under another key is refused whole (migration 0011's trigger forbids changing it), and a Worker
 * under another key reports itself misconfigured (src/configuration.ts). Deleting the row is the
 * deliberate way to move a database to another key.
 */
export const keyFingerprints = sqliteTable("key_fingerprints", {
  name: text("name").$type<FingerprintedSecret>().primaryKey(),
  fingerprint: text("fingerprint").notNull(),
  created: integer("created").notNull().default(now),
});
