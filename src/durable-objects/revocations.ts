/**
 * The client's revoked access tokens, listed until they would have expired anyway: by token
 * (`jti:`) or by the grant they came from (`grant:`). Each listing takes a new sequence number, so
 * that isolates holding a lease (leases.ts keeps their copies) learn of it when they next renew.
 * Table `revoked`. A grant whose refresh tokens carry it (oauth/self-contained-refresh-tokens.ts:
 * persistent ones, and those rotated in rotations.ts) is also kept as ended, in table
 * `ended_grants`, for as long as one of its tokens can be valid: they are checked here on each
 * use, never by a lease, so these long-kept rows travel with none.
 */
import { REFRESH_TOKEN_LIFETIME } from "../oauth/refresh-tokens";
import { type ExpiringRecords, scheduleCleanup } from "./expiry-alarm";
import type { Revocation, RevocationUpdate, TokenIdentity } from "./rate-limiter-rpc";
import { replaceOldTable } from "./table-successor";

/**
 * At most this many revocations travel with a lease (an isolate's first one carries every live
 * revocation of the client, grants' for up to a year); a client with more gets leases of one,
 * every call checked here, until they expire.
 */
const MAX_REVOCATIONS_PER_LEASE = 2_000;

/** The id a revocation is listed under, here and in the isolates' copies. */
export function revocationId(revocation: Revocation): string {
  return "jti" in revocation ? `jti:${revocation.jti}` : `grant:${revocation.grant}`;
}

/** The ids under which a token would be listed as revoked. */
export function revocationIds({ jti, grant }: TokenIdentity): string[] {
  return [...(jti === null ? [] : [`jti:${jti}`]), ...(grant === null ? [] : [`grant:${grant}`])];
}

export class Revocations implements ExpiringRecords {
  constructor(private readonly storage: DurableObjectStorage) {
    const { sql } = storage;
    // `seq` orders revocations for the isolates' copies; AUTOINCREMENT never hands out a number
    // twice, even once the newest row has been deleted.
    sql.exec(
      "CREATE TABLE IF NOT EXISTS revoked (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, expires_at INTEGER NOT NULL)",
    );
    sql.exec("CREATE INDEX IF NOT EXISTS revoked_expires_at ON revoked (expires_at)");
    sql.exec("CREATE TABLE IF NOT EXISTS ended_grants (grant_id TEXT PRIMARY KEY, expires_at INTEGER NOT NULL)");
    sql.exec("CREATE INDEX IF NOT EXISTS ended_grants_expires_at ON ended_grants (expires_at)");
    // Before leases, revocations were kept without a sequence number.
    replaceOldTable(
      sql,
      "revocations",
      "INSERT OR IGNORE INTO revoked (id, expires_at) SELECT id, expires_at FROM revocations",
    );
  }

  async revoke(revocations: Revocation[]): Promise<void> {
    for (const revocation of revocations) {
      const id = revocationId(revocation);
      this.storage.sql.exec(
        "REPLACE INTO revoked (id, expires_at) VALUES (?, max(?, coalesce((SELECT expires_at FROM revoked WHERE id = ?), 0)))",
        id,
        revocation.expiresAt,
        id,
      );
      await scheduleCleanup(this.storage, revocation.expiresAt);
      if ("grant" in revocation && revocation.persistent) await this.endGrant(revocation.grant);
    }
  }

  /**
   * A grant has ended: kept until every refresh token issued under it has expired (each lives 30
   * days from its issue, and none is issued once this is written, as a refresh asks here first).
   */
  private async endGrant(grant: string): Promise<void> {
    const keptUntil = Date.now() + REFRESH_TOKEN_LIFETIME * 1000;
    this.storage.sql.exec("REPLACE INTO ended_grants (grant_id, expires_at) VALUES (?, ?)", grant, keptUntil);
    await scheduleCleanup(this.storage, keptUntil);
  }

  /** Whether the grant has ended (revoked, or its user signed out), for a refresh token checked here. */
  isGrantEnded(grant: string): boolean {
    return this.storage.sql.exec("SELECT 1 FROM ended_grants WHERE grant_id = ?", grant).toArray().length > 0;
  }

  /** Whether the token, or the grant it came from, has been revoked. */
  isRevoked(token: TokenIdentity): boolean {
    const ids = revocationIds(token);
    const placeholders = ids.map(() => "?").join(", ");
    return this.storage.sql.exec(`SELECT 1 FROM revoked WHERE id IN (${placeholders})`, ...ids).toArray().length > 0;
  }

  /** The live revocations listed after `since`; null when there are more than a lease may carry. */
  after(since: number, now: number): RevocationUpdate | null {
    const { sql } = this.storage;
    const entries = sql
      .exec<{ id: string; expires_at: number }>(
        "SELECT id, expires_at FROM revoked WHERE seq > ? AND expires_at > ? ORDER BY seq LIMIT ?",
        since,
        now,
        MAX_REVOCATIONS_PER_LEASE + 1,
      )
      .toArray()
      .map(({ id, expires_at }) => ({ id, expiresAt: expires_at }));
    if (entries.length > MAX_REVOCATIONS_PER_LEASE) return null;
    const { seq } = sql.exec<{ seq: number | null }>("SELECT max(seq) AS seq FROM revoked").one();
    return { seq: Math.max(seq ?? 0, since), entries };
  }

  deleteExpired(now: number): void {
    this.storage.sql.exec("DELETE FROM revoked WHERE expires_at <= ?", now);
    this.storage.sql.exec("DELETE FROM ended_grants WHERE expires_at <= ?", now);
  }

  nextExpiry(): number | null {
    const next = (table: string) =>
      this.storage.sql.exec<{ next: number | null }>(`SELECT min(expires_at) AS next FROM ${table}`).one().next;
    const times = [next("revoked"), next("ended_grants")].filter((time) => time !== null);
    return times.length === 0 ? null : Math.min(...times);
  }
}
