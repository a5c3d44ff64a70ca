import { and, eq, isNotNull, sql } from "drizzle-orm";
import type { Database } from "../client";
import { clients, type FingerprintedSecret, keyFingerprints } from "../schema";

/** The data-protection key's recorded fingerprint, and the previous key's with its rotation's start while one is under way. */
export type RecordedKeys = {
  current: string | null;
  previous: { fingerprint: string; since: number } | null;
};

/** The recorded fingerprints, in one read. */
export async function findKeyFingerprints(db: Database): Promise<RecordedKeys> {
  const rows = await db.select().from(keyFingerprints);
  const row = (name: FingerprintedSecret) => rows.find((recorded) => recorded.name === name);
  const previous = row("DATA_PROTECTION_KEY_PREVIOUS");
  return {
    current: row("DATA_PROTECTION_KEY")?.fingerprint ?? null,
    previous: previous ? { fingerprint: previous.fingerprint, since: previous.created } : null,
  };
}

/** Records `fingerprint` for `name` unless one is recorded already (which is then left as it is). */
export async function recordKeyFingerprint(db: Database, name: FingerprintedSecret, fingerprint: string) {
  await db.insert(keyFingerprints).values({ name, fingerprint }).onConflictDoNothing();
}

/**
 * Starts a rotation from the key `from` names to the one `to` names: `from` becomes the previous
 * key (migration 0025's trigger takes the change only so). A rotation another isolate started
 * meanwhile is left as it is.
 */
export async function startKeyRotation(db: Database, from: string, to: string, now: number): Promise<void> {
  const fromIsRecorded = sql`EXISTS (SELECT 1 FROM ${keyFingerprints} WHERE ${keyFingerprints.name} = 'DATA_PROTECTION_KEY' AND ${keyFingerprints.fingerprint} = ${from})`;
  await db.batch([
    db
      .insert(keyFingerprints)
      .select(sql`SELECT 'DATA_PROTECTION_KEY_PREVIOUS', ${from}, ${now} WHERE ${fromIsRecorded}`)
      .onConflictDoNothing(),
    db
      .update(keyFingerprints)
      .set({ fingerprint: to })
      .where(and(eq(keyFingerprints.name, "DATA_PROTECTION_KEY"), eq(keyFingerprints.fingerprint, from))),
  ]);
}

/** Ends the rotation: nothing is read under the previous key any more. */
export function endKeyRotation(db: Database) {
  return db.delete(keyFingerprints).where(eq(keyFingerprints.name, "DATA_PROTECTION_KEY_PREVIOUS"));
}

/** Some client's sealed signing secret, or null when no client has one. */
export async function findSomeSealedSecret(db: Database): Promise<string | null> {
  const row = await db
    .select({ sealed: clients.signingSecretSealed })
    .from(clients)
    .where(isNotNull(clients.signingSecretSealed))
    .limit(1)
    .get();
  return row?.sealed ?? null;
}
