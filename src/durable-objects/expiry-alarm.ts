/**
 * The RateLimiter's one alarm, shared by everything it keeps with an expiry (the request window and
 * each SQLite table) and by the callbacks' schedule. Expiry is checked in code whenever a record is read; the alarm only reclaims
 * space, so it need not run more than once a minute.
 */

const MIN_ALARM_INTERVAL_MS = 60_000;

/** What the alarm asks of each store: every record it keeps carries its expiry. */
export interface ExpiringRecords {
  deleteExpired(now: number): void;
  /** When the first record left expires (ms); null when there is none. */
  nextExpiry(): number | null;
}

/**
 * Arms the alarm for a record that ends at `endsAt`. It moves earlier only for a record that ends
 * more than a minute before it, so a stream of new counters does not re-arm it on every attempt.
 */
export async function scheduleCleanup(storage: DurableObjectStorage, endsAt: number): Promise<void> {
  const alarm = await storage.getAlarm();
  if (alarm === null || endsAt + MIN_ALARM_INTERVAL_MS < alarm) await storage.setAlarm(endsAt);
}

/**
 * Deletes the stores' expired records, then wakes for the next to expire, a minute on at the
 * earliest, or at `due` (the callbacks' next delivery) when that comes first.
 */
export async function cleanUp(
  storage: DurableObjectStorage,
  due: number | null,
  stores: ExpiringRecords[],
): Promise<void> {
  const now = Date.now();
  for (const store of stores) store.deleteExpired(now);
  const expiry = Math.min(...stores.map((store) => store.nextExpiry() ?? Infinity));
  const next = Math.min(
    Number.isFinite(expiry) ? Math.max(expiry, now + MIN_ALARM_INTERVAL_MS) : Infinity,
    due ?? Infinity,
  );
  if (Number.isFinite(next)) await storage.setAlarm(next);
}
