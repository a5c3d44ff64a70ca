/**
 * Plain counts of sign-in attempts per key, each counted before its proof is checked (so that
 * parallel attempts are counted too) and refused once a limit is reached in the window: the
 * sign-in links mailed per network address, which are never taken back, and the password attempts
 * of a Worker from before networks were counted (a rolling deploy). Table `sign_in_attempts`.
 */
import { type ExpiringRecords, scheduleCleanup } from "./expiry-alarm";
import type { SignInAttempt } from "./rate-limiter-rpc";

/** How long a sign-in counter counts (password-throttle.ts's too). */
export const SIGN_IN_WINDOW_MS = 15 * 60_000;

type SignInAttempts = { count: number; ends_at: number };

export class SignInCounts implements ExpiringRecords {
  constructor(private readonly storage: DurableObjectStorage) {
    storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS sign_in_attempts (account TEXT PRIMARY KEY, count INTEGER NOT NULL, ends_at INTEGER NOT NULL)",
    );
    storage.sql.exec("CREATE INDEX IF NOT EXISTS sign_in_attempts_ends_at ON sign_in_attempts (ends_at)");
  }

  /** Counts an attempt under `key`; refused once `limit` have been counted in the window. */
  async begin(key: string, limit: number): Promise<SignInAttempt> {
    const now = Date.now();
    const [stored] = this.storage.sql
      .exec<SignInAttempts>("SELECT count, ends_at FROM sign_in_attempts WHERE account = ?", key)
      .toArray();
    const live = stored && now < stored.ends_at ? stored : undefined;
    if (live && live.count >= limit) {
      return { allowed: false, retryAfter: Math.ceil((live.ends_at - now) / 1000) };
    }
    const endsAt = live?.ends_at ?? now + SIGN_IN_WINDOW_MS;
    this.storage.sql.exec(
      "INSERT INTO sign_in_attempts (account, count, ends_at) VALUES (?, ?, ?) " +
        "ON CONFLICT (account) DO UPDATE SET count = excluded.count, ends_at = excluded.ends_at",
      key,
      (live?.count ?? 0) + 1,
      endsAt,
    );
    if (!live) await scheduleCleanup(this.storage, endsAt);
    return { allowed: true };
  }

  /** The attempts counted under `key` no longer count. */
  takeBack(key: string): void {
    this.storage.sql.exec("DELETE FROM sign_in_attempts WHERE account = ?", key);
  }

  deleteExpired(now: number): void {
    this.storage.sql.exec("DELETE FROM sign_in_attempts WHERE ends_at <= ?", now);
  }

  nextExpiry(): number | null {
    return this.storage.sql.exec<{ next: number | null }>("SELECT min(ends_at) AS next FROM sign_in_attempts").one()
      .next;
  }
}
