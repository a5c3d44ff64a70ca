/**
 * The client's one-time values (exchange codes it redeems, its assertions' jti), spent here
 * because reads here are strongly consistent, which KV's are not. A value is spent by an attempt:
 * at once, or in two steps, reserved while the attempt writes what the value starts and committed
 * once that is written, so that a replay always finds what to revoke; an attempt that fails before
 * it answers releases the value for the client's retry (one-time-values.ts is the isolate's side).
 * Every call names its attempt and answers a repeat of itself as it answered the first (the
 * platform layer repeats a call whose answer was lost). Table `redeemed`.
 */
import { type ExpiringRecords, scheduleCleanup } from "./expiry-alarm";
import type { Redemption, RedemptionAttempt } from "./rate-limiter-rpc";
import { replaceOldTable } from "./table-successor";

/**
 * A redemption is remembered this long after its value expired (KV keeps a code 60 s from
 * creation, a 30 s code 30 s past expiry), so that a replay is told from an expired value, and
 * what the first redemption started is revoked, for as long as the value can be found.
 */
const REDEMPTION_KEPT_AFTER_EXPIRY_MS = 60_000;
/**
 * How long a reservation holds a value for its attempt, and how long the attempt has to commit
 * it: longer than a request takes from the reservation to its commit (a read, a write and the
 * commit, each within the platform's 3 s deadline), yet a third of a code's 30 s, so that a client
 * whose attempt failed and whose release was lost too can still redeem the code once the hold
 * has lapsed.
 */
export const RESERVATION_HOLD_MS = 10_000;

/** A `redeemed` row: spent by `attempt` (null: a Worker from before attempts), or held for it until `held_until`. */
type RedeemedRow = { attempt: string | null; grant_id: string | null; held_until: number | null };

export class Redemptions implements ExpiringRecords {
  constructor(private readonly storage: DurableObjectStorage) {
    const { sql } = storage;
    sql.exec(
      "CREATE TABLE IF NOT EXISTS redeemed (key TEXT PRIMARY KEY, attempt TEXT, grant_id TEXT, held_until INTEGER, expires_at INTEGER NOT NULL)",
    );
    sql.exec("CREATE INDEX IF NOT EXISTS redeemed_expires_at ON redeemed (expires_at)");
    // Before reservations, spent values were kept without their attempt.
    replaceOldTable(
      sql,
      "redemptions",
      "INSERT OR IGNORE INTO redeemed (key, grant_id, expires_at) SELECT key, grant_id, expires_at FROM redemptions",
    );
  }

  /**
   * Spends, or with `by.reserve` reserves, a one-time value that is valid until `expiresAt` (ms),
   * for the attempt `by`. Expiry is judged here too, by the same clock that forgets the record, so
   * a value whose record is gone can never be spent again: what checked it before the call may
   * have done so a moment before it expired. `grant` is what the redemption starts, returned to a
   * later attempt to revoke. A value held for another attempt is `held` until its hold lapses;
   * then that attempt may no longer commit it, and another may take it over. Without `by` (a
   * Worker from before attempts) the value is spent at once, and a held one is `replayed` with
   * nothing to revoke.
   */
  async redeemOnce(
    key: string,
    expiresAt: number,
    grant: string | null,
    by: RedemptionAttempt | undefined,
  ): Promise<Redemption> {
    const now = Date.now();
    const earlier = this.record(key);
    if (earlier) {
      const same = by !== undefined && earlier.attempt === by.id;
      if (earlier.held_until === null)
        return same ? { outcome: "redeemed" } : { outcome: "replayed", grant: earlier.grant_id };
      if (same) return { outcome: "reserved" };
      if (earlier.held_until > now) {
        if (!by) return { outcome: "replayed", grant: null };
        return { outcome: "held", retryAfter: Math.ceil((earlier.held_until - now) / 1000) };
      }
    }
    if (now >= expiresAt) return { outcome: "expired" };
    const keptUntil = expiresAt + REDEMPTION_KEPT_AFTER_EXPIRY_MS;
    this.storage.sql.exec(
      "REPLACE INTO redeemed (key, attempt, grant_id, held_until, expires_at) VALUES (?, ?, ?, ?, ?)",
      key,
      by?.id ?? null,
      grant,
      by?.reserve ? now + RESERVATION_HOLD_MS : null,
      keptUntil,
    );
    await scheduleCleanup(this.storage, keptUntil);
    return { outcome: by?.reserve ? "reserved" : "redeemed" };
  }

  /**
   * Spends the value `attempt` reserved, while its hold lasts; false once it has lapsed, whether
   * or not another attempt took the value over (or when the value is no longer known). A takeover
   * is only allowed from the same instant, so the two never race: at most one attempt commits a
   * value and answers with what it started, and a replay revokes that (RFC 6749 §4.1.2).
   */
  commit(key: string, attempt: string): boolean {
    const record = this.record(key);
    if (record?.attempt !== attempt) return false;
    if (record.held_until === null) return true;
    if (Date.now() >= record.held_until) return false;
    this.storage.sql.exec("UPDATE redeemed SET held_until = NULL WHERE key = ?", key);
    return true;
  }

  /**
   * Lets go of the value `attempt` reserved or spent: the attempt failed before it answered, so
   * what it wrote reached no one. A value another attempt has taken over stays as it is.
   */
  release(key: string, attempt: string): void {
    this.storage.sql.exec("DELETE FROM redeemed WHERE key = ? AND attempt = ?", key, attempt);
  }

  /** Whether the value has been spent (a reservation may still be released). */
  redeemed(key: string): boolean {
    return (
      this.storage.sql.exec("SELECT 1 FROM redeemed WHERE key = ? AND held_until IS NULL", key).toArray().length > 0
    );
  }

  deleteExpired(now: number): void {
    this.storage.sql.exec("DELETE FROM redeemed WHERE expires_at <= ?", now);
  }

  nextExpiry(): number | null {
    return this.storage.sql.exec<{ next: number | null }>("SELECT min(expires_at) AS next FROM redeemed").one().next;
  }

  private record(key: string): RedeemedRow | undefined {
    const [record] = this.storage.sql
      .exec<RedeemedRow>("SELECT attempt, grant_id, held_until FROM redeemed WHERE key = ?", key)
      .toArray();
    return record;
  }
}
