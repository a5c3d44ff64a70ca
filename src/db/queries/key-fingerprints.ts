import { eq } from "drizzle-orm";
import type { Database } from "../client";
import { type FingerprintedSecret, keyFingerprints } from "../schema";

/** The fingerprint recorded for `name`, or null when none is yet. */
export async function findKeyFingerprint(db: Database, name: FingerprintedSecret): Promise<string | null> {
  const row = await db
    .select({ fingerprint: keyFingerprints.fingerprint })
    .from(keyFingerprints)
    .where(eq(keyFingerprints.name, name))
    .get();
  return row?.fingerprint ?? null;
}
