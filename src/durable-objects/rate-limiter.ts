/**
 * One RateLimiter per client (idFromName(clientId)) guards every authenticated /api/2 request:
 * it checks the client's IP allow-list and endpoint grants, counts the request in the client's
 * fixed window, and tells the client's current merchant, which scopes the call. It also counts
 * password sign-in attempts per account, so that nobody holding the client's credentials can
 * guess passwords without limit. It is also where the client's one-time values are spent (exchange
 * codes it redeems, its assertions' jti) and where its revoked access tokens are listed until they
 * expire: reads here are strongly consistent, which KV's are not. The client's policy (merchant, quota, window, allow-list,
 * grants) is read from D1 at most once a minute per client, so the request path itself touches no
 * database; policy changes apply within a minute. Everything survives eviction in the object's
 * storage (the window in its KV; sign-in attempts, redemptions and revocations in SQLite tables
 * indexed by expiry); one alarm, at most once a minute, deletes what has expired.
 */
import { DurableObject } from "cloudflare:workers";
import { openDatabase } from "../db/client";
import { findClientPolicy } from "../db/queries/clients";
import type { RateLimitSetting } from "../db/schema";
import type { Bindings } from "../env";
import { ipAllowed } from "../http/ip";
import type { ApiEndpoint } from "../schemas/api-endpoints";

/** Quota for clients without a `rateLimit` of their own. */
export const DEFAULT_RATE_LIMIT: RateLimitSetting = { limit: 1000, windowSeconds: 3600 };
const POLICY_TTL_MS = 60_000;
const WINDOW_KEY = "window";
/** Failed password sign-ins per account and client before the account is locked for the window. */
const SIGN_IN_FAILURE_LIMIT = 5;
const SIGN_IN_WINDOW_MS = 15 * 60_000;
/**
 * A redemption is remembered this long after its value expired (KV keeps a code 60 s from
 * creation, a 30 s code 30 s past expiry), so that a replay is told from an expired value, and
 * what the first redemption started is revoked, for as long as the value can be found.
 */
const REDEMPTION_KEPT_AFTER_EXPIRY_MS = 60_000;
/** Expiry is checked in code; the alarm only reclaims space, so it need not run more often. */
const MIN_ALARM_INTERVAL_MS = 60_000;

/** The client's RateLimiter. */
export function rateLimiterFor(env: Bindings, clientId: string) {
  return env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(clientId));
}

/** What the container's `request` object and the X-RateLimit-* headers report. */
export type RateLimitFigures = {
  limit: number;
  remaining: number;
  /** Seconds until the current window ends and the quota is whole again. */
  reset: number;
};

export type Admission =
  | { outcome: "admitted"; figures: RateLimitFigures; merchantId: number }
  | { outcome: "rate_limited"; figures: RateLimitFigures }
  | { outcome: "ip_not_allowed" | "unknown_client" | "endpoint_not_granted" | "revoked" };

export type SignInAttempt = { allowed: true } | { allowed: false; retryAfter: number };

/**
 * What a revocation may name: an access token (`jti`), the grant it came from, or both; a grant
 * alone is a grant being started (a redemption's refresh-token family, a webview's session).
 */
export type TokenIdentity = { jti: string | null; grant: string | null };

/** A revocation: of one access token (`jti`) or of every access token of a grant, kept until `expiresAt` (ms). */
export type Revocation = { jti: string; expiresAt: number } | { grant: string; expiresAt: number };

/**
 * The outcome of spending a one-time value: `redeemed` the first time before it expires; `expired`
 * from its expiry on; `replayed` after a first redemption, with the grant that one started, so
 * that the caller can revoke it (RFC 6749 §4.1.2).
 */
export type Redemption =
  { outcome: "redeemed" } | { outcome: "expired" } | { outcome: "replayed"; grant: string | null };

type Policy = RateLimitSetting & {
  merchantId: number;
  ipAllowList: string[];
  /** Null when the client may call every endpoint. */
  apiEndpoints: ApiEndpoint[] | null;
  loadedAt: number;
};
/** The client's request window. */
type Counter = { endsAt: number; count: number };
type SignInAttempts = { count: number; ends_at: number };

export class RateLimiter extends DurableObject<Bindings> {
  private policy: Policy | null = null;
  private window: Counter | undefined;

  constructor(ctx: DurableObjectState, env: Bindings) {
    super(ctx, env);
    ctx.storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS sign_in_attempts (account TEXT PRIMARY KEY, count INTEGER NOT NULL, ends_at INTEGER NOT NULL)",
    );
    ctx.storage.sql.exec("CREATE INDEX IF NOT EXISTS sign_in_attempts_ends_at ON sign_in_attempts (ends_at)");
    ctx.storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS redemptions (key TEXT PRIMARY KEY, grant_id TEXT, expires_at INTEGER NOT NULL)",
    );
    ctx.storage.sql.exec("CREATE INDEX IF NOT EXISTS redemptions_expires_at ON redemptions (expires_at)");
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS revocations (id TEXT PRIMARY KEY, expires_at INTEGER NOT NULL)");
    ctx.storage.sql.exec("CREATE INDEX IF NOT EXISTS revocations_expires_at ON revocations (expires_at)");
  }

  /**
   * Admits a call of `endpoint` with `token`: token not revoked, allowed address, granted endpoint,
   * then quota; a refusal spends none.
   */
  async admit(clientId: string, ip: string | null, endpoint: ApiEndpoint, token: TokenIdentity): Promise<Admission> {
    const policy = await this.currentPolicy(clientId);
    if (!policy) return { outcome: "unknown_client" };
    if (this.revokedNow(token)) return { outcome: "revoked" };
    if (!ipAllowed(policy.ipAllowList, ip)) {
      return { outcome: "ip_not_allowed" };
    }
    if (policy.apiEndpoints !== null && !policy.apiEndpoints.includes(endpoint)) {
      return { outcome: "endpoint_not_granted" };
    }
    const now = Date.now();
    let window = (this.window ??= this.ctx.storage.kv.get<Counter>(WINDOW_KEY));
    if (!window || now >= window.endsAt) {
      window = this.window = { endsAt: now + policy.windowSeconds * 1000, count: 0 };
      await this.scheduleCleanup(window.endsAt);
    }
    const reset = Math.ceil((window.endsAt - now) / 1000);
    if (window.count >= policy.limit) {
      return { outcome: "rate_limited", figures: { limit: policy.limit, remaining: 0, reset } };
    }
    window.count += 1;
    this.ctx.storage.kv.put(WINDOW_KEY, window);
    const figures = { limit: policy.limit, remaining: policy.limit - window.count, reset };
    return { outcome: "admitted", figures, merchantId: policy.merchantId };
  }

  /**
   * Counts a password sign-in attempt for an account (an opaque key) before the password is
   * checked, so that parallel guesses are counted too; a correct password takes the count back
   * (signInSucceeded). Refused once `limit` attempts have failed in the window. Also counts what is
   * never taken back (sign-in links asked for from one address, `limit` per window).
   */
  async beginSignIn(account: string, limit = SIGN_IN_FAILURE_LIMIT): Promise<SignInAttempt> {
    const now = Date.now();
    const [stored] = this.ctx.storage.sql
      .exec<SignInAttempts>("SELECT count, ends_at FROM sign_in_attempts WHERE account = ?", account)
      .toArray();
    const live = stored && now < stored.ends_at ? stored : undefined;
    if (live && live.count >= limit) {
      return { allowed: false, retryAfter: Math.ceil((live.ends_at - now) / 1000) };
    }
    const endsAt = live?.ends_at ?? now + SIGN_IN_WINDOW_MS;
    this.ctx.storage.sql.exec(
      "INSERT INTO sign_in_attempts (account, count, ends_at) VALUES (?, ?, ?) " +
        "ON CONFLICT (account) DO UPDATE SET count = excluded.count, ends_at = excluded.ends_at",
      account,
      (live?.count ?? 0) + 1,
      endsAt,
    );
    if (!live) await this.scheduleCleanup(endsAt);
    return { allowed: true };
  }

  /** The password was right: the account's earlier failures no longer count. */
  async signInSucceeded(account: string): Promise<void> {
    this.ctx.storage.sql.exec("DELETE FROM sign_in_attempts WHERE account = ?", account);
  }

  /**
   * Spends a one-time value (an exchange code, an assertion's jti) that is valid until `expiresAt`
   * (ms). Expiry is judged here too, by the same clock that forgets the record, so a value whose
   * record is gone can never be spent again: what checked it before the call may have done so a
   * moment before it expired. `grant` is what the redemption starts, returned to any later attempt.
   */
  async redeemOnce(key: string, expiresAt: number, grant: string | null = null): Promise<Redemption> {
    const keptUntil = expiresAt + REDEMPTION_KEPT_AFTER_EXPIRY_MS;
    const [earlier] = this.ctx.storage.sql
      .exec<{ grant_id: string | null }>("SELECT grant_id FROM redemptions WHERE key = ?", key)
      .toArray();
    if (earlier) return { outcome: "replayed", grant: earlier.grant_id };
    if (Date.now() >= expiresAt) return { outcome: "expired" };
    this.ctx.storage.sql.exec(
      "INSERT INTO redemptions (key, grant_id, expires_at) VALUES (?, ?, ?)",
      key,
      grant,
      keptUntil,
    );
    await this.scheduleCleanup(keptUntil);
    return { outcome: "redeemed" };
  }

  /** Lists access tokens as revoked until they would have expired anyway. */
  async revoke(revocations: Revocation[]): Promise<void> {
    for (const revocation of revocations) {
      const id = "jti" in revocation ? `jti:${revocation.jti}` : `grant:${revocation.grant}`;
      this.ctx.storage.sql.exec(
        "INSERT INTO revocations (id, expires_at) VALUES (?, ?) " +
          "ON CONFLICT (id) DO UPDATE SET expires_at = max(expires_at, excluded.expires_at)",
        id,
        revocation.expiresAt,
      );
      await this.scheduleCleanup(revocation.expiresAt);
    }
  }

  /** Whether the token, or the grant it came from, has been revoked. */
  async revoked(token: TokenIdentity): Promise<boolean> {
    return this.revokedNow(token);
  }

  private revokedNow({ jti, grant }: TokenIdentity): boolean {
    const ids = [...(jti === null ? [] : [`jti:${jti}`]), ...(grant === null ? [] : [`grant:${grant}`])];
    const placeholders = ids.map(() => "?").join(", ");
    return (
      this.ctx.storage.sql.exec(`SELECT 1 FROM revocations WHERE id IN (${placeholders})`, ...ids).toArray().length > 0
    );
  }

  /** Deletes the expired counters and records, then wakes for the next to expire, a minute on at the earliest. */
  override async alarm(): Promise<void> {
    const now = Date.now();
    this.ctx.storage.sql.exec("DELETE FROM sign_in_attempts WHERE ends_at <= ?", now);
    this.ctx.storage.sql.exec("DELETE FROM redemptions WHERE expires_at <= ?", now);
    this.ctx.storage.sql.exec("DELETE FROM revocations WHERE expires_at <= ?", now);
    let window = this.ctx.storage.kv.get<Counter>(WINDOW_KEY);
    if (window && now >= window.endsAt) {
      this.ctx.storage.kv.delete(WINDOW_KEY);
      window = undefined;
    }
    this.window = window;
    const { next } = this.ctx.storage.sql
      .exec<{ next: number | null }>(
        "SELECT min(next) AS next FROM (SELECT min(ends_at) AS next FROM sign_in_attempts " +
          "UNION ALL SELECT min(expires_at) FROM redemptions UNION ALL SELECT min(expires_at) FROM revocations)",
      )
      .one();
    const earliest = Math.min(next ?? Infinity, window?.endsAt ?? Infinity);
    if (Number.isFinite(earliest)) await this.ctx.storage.setAlarm(Math.max(earliest, now + MIN_ALARM_INTERVAL_MS));
  }

  /**
   * One alarm serves every counter. It moves earlier only for a counter that ends more than a
   * minute before it, so a stream of new counters does not re-arm it on every attempt.
   */
  private async scheduleCleanup(endsAt: number): Promise<void> {
    const alarm = await this.ctx.storage.getAlarm();
    if (alarm === null || endsAt + MIN_ALARM_INTERVAL_MS < alarm) await this.ctx.storage.setAlarm(endsAt);
  }

  private async currentPolicy(clientId: string): Promise<Policy | null> {
    if (this.policy && Date.now() - this.policy.loadedAt < POLICY_TTL_MS) return this.policy;
    const row = await findClientPolicy(openDatabase(this.env.DB), clientId);
    this.policy = row
      ? {
          ...(row.rateLimit ?? DEFAULT_RATE_LIMIT),
          merchantId: row.merchantId,
          ipAllowList: row.ipAllowList,
          apiEndpoints: row.apiEndpoints,
          loadedAt: Date.now(),
        }
      : null;
    return this.policy;
  }
}
