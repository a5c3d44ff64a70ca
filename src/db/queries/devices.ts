import { sql } from "drizzle-orm";
import type { Database } from "../client";
import { deviceFingerprints } from "../schema";

type DeviceFingerprint = typeof deviceFingerprints.$inferInsert;

/** Stores a user's device fingerprint once; storing it again records the latest client, platform and version. */
export function saveDeviceFingerprint(db: Database, fingerprint: DeviceFingerprint) {
  return db
    .insert(deviceFingerprints)
    .values(fingerprint)
    .onConflictDoUpdate({
      target: [deviceFingerprints.userId, deviceFingerprints.hash],
      set: {
        clientId: sql`excluded.client_id`,
        platform: sql`excluded.platform`,
        applicationVersion: sql`excluded.application_version`,
      },
    });
}
