/**
 * The client's one-time values (exchange codes it redeems, its assertions' jti), spent here
 * because reads here are strongly consistent, which KV's are not. Table `redemptions`.
 */
import { type ExpiringRecords, scheduleCleanup } from "./expiry-alarm";
import type { Redemption } from "./rate-limiter-rpc";

/**
 * A redemption is remembered this long after its value expired (KV keeps a code 60 s from
 * creation, a 30 s code 30 s past expiry), so that a replay is told from an expired value, and
 * what the first redemption started is revoked, for as long as the value can be found.
 */
const REDEMPTION_KEPT_AFTER_EXPIRY_MS = 60_000;

export class Redemptions implements ExpiringRecords {
  constructor(private readonly storage: DurableObjectStorage) {
    storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS redemptions (key TEXT PRIMARY KEY, grant_id TEXT, expires_at INTEGER NOT NULL)",
    );
    storage.sql.exec("CREATE INDEX IF NOT EXISTS redemptions_expires_at ON redemptions (expires_at)");
  }

  /**
   * Spends a one-time value that is valid until `expiresAt` (ms). Expiry is judged here too, by the
   * same clock that forgets the record, so a value whose record is gone can never be spent again:
   * what checked it before the call may have done so a moment before it expired. `grant` is what
   * the redemption starts, returned to any later attempt.
   */
  async redeemOnce(key: string, expiresAt: number, grant: string | null): Promise<Redemption> {
    const keptUntil = expiresAt + REDEMPTION_KEPT_AFTER_EXPIRY_MS;
    const [earlier] = this.storage.sql
      .exec<{ grant_id: string | null }>("SELECT grant_id FROM redemptions WHERE key = ?", key)
      .toArray();
    if (earlier) return { outcome: "replayed", grant: earlier.grant_id };
    if (Date.now() >= expiresAt) return { outcome: "expired" };
    this.storage.sql.exec(
      "INSERT INTO redemptions (key, grant_id, expires_at) VALUES (?, ?, ?)",
      key,
      grant,
      keptUntil,
    );
    await scheduleCleanup(this.storage, keptUntil);
    return { outcome: "redeemed" };
  }

  redeemed(key: string): boolean {
    return this.storage.sql.exec("SELECT 1 FROM redemptions WHERE key = ?", key).toArray().length > 0;
  }

  deleteExpired(now: number): void {
    this.storage.sql.exec("DELETE FROM redemptions WHERE expires_at <= ?", now);
  }

  nextExpiry(): number | null {
    return this.storage.sql.exec<{ next: number | null }>("SELECT min(expires_at) AS next FROM redemptions").one().next;
  }
}
