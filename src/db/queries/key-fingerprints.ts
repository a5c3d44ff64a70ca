import { eq, isNotNull } from "drizzle-orm";
import type { Database } from "../client";
import { clients, type FingerprintedSecret, keyFingerprints } from "../schema";

/** The fingerprint recorded for `name`, or null when none is yet. */
export async function findKeyFingerprint(db: Database, name: FingerprintedSecret): Promise<string | null> {
  const row = await db
    .select({ fingerprint: keyFingerprints.fingerprint })
    .from(keyFingerprints)
    .where(eq(keyFingerprints.name, name))
    .get();
  return row?.fingerprint ?? null;
}

/** Records `fingerprint` for `name` unless one is recorded already (which is then left as it is). */
export async function recordKeyFingerprint(db: Database, name: FingerprintedSecret, fingerprint: string) {
  await db.insert(keyFingerprints).values({ name, fingerprint }).onConflictDoNothing();
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
