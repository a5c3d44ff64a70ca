import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { now } from "./now";

/** The secrets whose fingerprints key_fingerprints keeps. */
export type FingerprintedSecret = "DATA_PROTECTION_KEY" | "DATA_PROTECTION_KEY_PREVIOUS";

/**
 * Fingerprints of the secrets the stored data depends on (security/data-protection.ts
 * keyFingerprint), by secret name: DATA_PROTECTION_KEY, under which client secrets and refresh
 * tokens are hashed and signing secrets sealed, and during a key rotation
 * DATA_PROTECTION_KEY_PREVIOUS, the key before it, which data may still be under (its `created`:
 * when the rotation started). The first import records the key; an import under another key is
 * refused whole (migration 0025's trigger lets the fingerprint change only to move it to the
 * previous row), and a Worker under another key reports itself misconfigured (src/configuration.ts).
 * Deleting the rows is the deliberate way to move a database to another key.
 */
export const keyFingerprints = sqliteTable("key_fingerprints", {
  name: text("name").$type<FingerprintedSecret>().primaryKey(),
  fingerprint: text("fingerprint").notNull(),
  created: integer("created").notNull().default(now),
});
