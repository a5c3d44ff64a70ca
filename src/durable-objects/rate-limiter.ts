/**
 * One RateLimiter per client (idFromName(clientId)) guards every authenticated /api/2 request:
 * it checks the client's IP allow-list and endpoint grants, counts the request in the client's
 * fixed window, and tells the client's current merchant, which scopes the call. It need not be
 * asked on every request: it hands an isolate a lease (durable-objects/leases.ts), a slice of the
 * remaining quota with the client's policy and revocations, valid LEASE_MS; the slots are counted
 * here when they are handed out, and those left unused are handed back when the isolate lets the
 * lease go. When little quota is left the lease is of one request: every call asks, as exactly as
 * a counter can. It also throttles password sign-ins at the client (beginSignIn: per account and
 * network, per account, per network) and counts the sign-in links mailed per network address, so
 * that its login page and token endpoint can be used neither to guess passwords without limit nor
 * to lock a user out. Spraying across clients is counted per client, each in its own object. It
 * is also where the client's one-time values are spent (exchange codes it redeems, its assertions'
 * jti) and where its revoked access tokens are listed until they expire: reads here are strongly
 * consistent, which KV's are not. The client's policy (merchant, quota, window, allow-list,
 * grants) is read from D1 at most every POLICY_TTL_MS per client. Everything survives eviction in
 * the object's storage (the window and its leases in its KV; sign-in counters, known networks,
 * redemptions and revocations in SQLite tables indexed by expiry); one alarm, at most once a
 * minute, deletes what has expired.
 */
import { DurableObject } from "cloudflare:workers";
import { openDatabase } from "../db/client";
import { findClientPolicy } from "../db/queries/clients";
import type { RateLimitSetting } from "../db/schema";
import type { Bindings, RequestTiming } from "../env";
import { ipAllowed } from "../http/ip";
import type { ApiEndpoint } from "../schemas/api-endpoints";
import type {
  Admission,
  ClientPolicy,
  Lease,
  LeaseTerms,
  RateLimiterRpc,
  Redemption,
  Renewal,
  Revocation,
  RevocationUpdate,
  SignInAttempt,
  SignInOrigin,
  TokenIdentity,
} from "./rate-limiter-rpc";

/** Quota for clients without a `rateLimit` of their own. */
export const DEFAULT_RATE_LIMIT: RateLimitSetting = { limit: 1000, windowSeconds: 3600 };
/** How long a lease lets an isolate admit calls without asking: the bound on revocations reaching it. */
export const LEASE_MS = 5_000;
/** How old the client's policy may be here; with LEASE_MS, the bound on a policy change reaching every call. */
export const POLICY_TTL_MS = 5_000;
/**
 * A lease takes at most this share of what is left in the window, so other isolates find quota
 * too; once that share is under two requests, leases are of one.
 */
const LEASE_SHARE = 8;
const MAX_LEASE_SLOTS = 10_000;
/**
 * At most this many revocations travel with a lease (an isolate's first one carries every live
 * revocation of the client, grants' for up to a year); a client with more gets leases of one,
 * every call checked here, until they expire.
 */
const MAX_REVOCATIONS_PER_LEASE = 2_000;
const WINDOW_KEY = "window";
/**
 * Failed password sign-ins for one account from one network before that pair is held for the
 * rest of the window: what one network may guess at one account.
 */
export const SIGN_IN_FAILURE_LIMIT = 5;
const SIGN_IN_WINDOW_MS = 15 * 60_000;
/**
 * An account's failures from all networks that cost no wait: more than one network's limit, so
 * that a stranger on their own cannot even slow the owner down.
 */
const ACCOUNT_FAILURES_BEFORE_DELAY = 10;
/**
 * Each failure beyond those doubles the wait before the account's next attempt, from 1 s up to
 * 60 s: guessing from many networks is held to about one guess a minute, and the owner waits a
 * minute at most, never the window.
 */
const FIRST_DELAY_MS = 1_000;
const MAX_DELAY_MS = 60_000;
/**
 * Failed sign-ins from one network, for any accounts, in the window: password spraying, counted
 * per client. A browser's network (the login page) is a household's or an office's. At the token
 * endpoint it is the client's server, through which all of the client's users sign in, so it gets
 * ten times as many: 20 a minute on average, what some 280,000 sign-ins a day produce at one
 * failure in ten.
 */
const NETWORK_FAILURE_LIMIT: Record<SignInOrigin["caller"], number> = { browser: 30, "client server": 300 };
/**
 * A network an account signed in from with its password is spared the account's wait this long
 * (the longest session): there its owner signs in even while strangers elsewhere keep guessing.
 */
const KNOWN_NETWORK_MS = 30 * 24 * 3_600_000;
/** The network or account column of a counter that counts across all networks or accounts. */
const EVERY = "*";
/**
 * A redemption is remembered this long after its value expired (KV keeps a code 60 s from
 * creation, a 30 s code 30 s past expiry), so that a replay is told from an expired value, and
 * what the first redemption started is revoked, for as long as the value can be found.
 */
const REDEMPTION_KEPT_AFTER_EXPIRY_MS = 60_000;
/** Expiry is checked in code; the alarm only reclaims space, so it need not run more often. */
const MIN_ALARM_INTERVAL_MS = 60_000;

/** The wait after an account's latest failure, once it has `failures` from all networks in the window. */
function accountDelay(failures: number): number {
  if (failures < ACCOUNT_FAILURES_BEFORE_DELAY) return 0;
  return Math.min(FIRST_DELAY_MS * 2 ** (failures - ACCOUNT_FAILURES_BEFORE_DELAY), MAX_DELAY_MS);
}

/**
 * The client's RateLimiter. Given the request's `timing` (outside production), each call made
 * through it is timed into Server-Timing's `do`: pass it for the calls the request waits on, never
 * for those left running in the background after the answer.
 */
export function rateLimiterFor(env: Bindings, clientId: string, timing?: RequestTiming) {
  const stub = env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(clientId));
  return timing ? timedCalls(stub, timing) : stub;
}

/**
 * The stub, its methods' calls each timed and counted into `timing`. A timed call returns a plain
 * promise, so it cannot be pipelined (nothing here pipelines RPC calls).
 */
function timedCalls<Stub extends object>(stub: Stub, timing: RequestTiming): Stub {
  return new Proxy(stub, {
    get(target, name) {
      const member: unknown = Reflect.get(target, name);
      // `then` stays as it is (a stub must not turn into a thenable), and so do symbol-keyed
      // members such as Symbol.dispose, which are no calls to the object.
      if (typeof member !== "function" || typeof name !== "string" || name === "then") return member;
      return async (...args: unknown[]) => {
        const started = performance.now();
        try {
          return await Reflect.apply(member, target, args);
        } finally {
          timing.durableObjectMs += performance.now() - started;
          timing.durableObjectCalls += 1;
        }
      };
    },
  });
}

/** What a lease of one carries: it admits nothing later, so it needs no revocations. */
const NO_REVOCATIONS: RevocationUpdate = { seq: -1, entries: [] };

/** What a caller from before leases asks for, during a rolling deploy: this call alone. */
const NO_LEASE: LeaseTerms = { want: 1, revocationsSince: -1, release: null };

/** The id a revocation is listed under, here and in the isolates' copies. */
export function revocationId(revocation: Revocation): string {
  return "jti" in revocation ? `jti:${revocation.jti}` : `grant:${revocation.grant}`;
}

/** The ids under which a token would be listed as revoked. */
export function revocationIds({ jti, grant }: TokenIdentity): string[] {
  return [...(jti === null ? [] : [`jti:${jti}`]), ...(grant === null ? [] : [`grant:${grant}`])];
}

type Policy = ClientPolicy & { windowSeconds: number; loadedAt: number };
/**
 * The client's request window: `count` is every slot handed out in it, used or still leased;
 * `leases` the slots of each lease not yet handed back, by id.
 */
type Counter = { endsAt: number; count: number; leases: Record<string, number>; nextLease: number };
type SignInAttempts = { count: number; ends_at: number };
/** A password_failures row: failures counted until `ends_at`, the latest at `last_at`. */
type PasswordFailures = { count: number; last_at: number; ends_at: number };

export class RateLimiter extends DurableObject<Bindings> implements RateLimiterRpc {
  private policy: Policy | null = null;
  private window: Counter | undefined;

  constructor(ctx: DurableObjectState, env: Bindings) {
    super(ctx, env);
    const { sql } = ctx.storage;
    sql.exec(
      "CREATE TABLE IF NOT EXISTS sign_in_attempts (account TEXT PRIMARY KEY, count INTEGER NOT NULL, ends_at INTEGER NOT NULL)",
    );
    sql.exec("CREATE INDEX IF NOT EXISTS sign_in_attempts_ends_at ON sign_in_attempts (ends_at)");
    sql.exec(
      "CREATE TABLE IF NOT EXISTS password_failures (account TEXT NOT NULL, network TEXT NOT NULL, " +
        "count INTEGER NOT NULL, last_at INTEGER NOT NULL, ends_at INTEGER NOT NULL, PRIMARY KEY (account, network))",
    );
    sql.exec("CREATE INDEX IF NOT EXISTS password_failures_ends_at ON password_failures (ends_at)");
    sql.exec(
      "CREATE TABLE IF NOT EXISTS known_networks (account TEXT NOT NULL, network TEXT NOT NULL, " +
        "expires_at INTEGER NOT NULL, PRIMARY KEY (account, network))",
    );
    sql.exec("CREATE INDEX IF NOT EXISTS known_networks_expires_at ON known_networks (expires_at)");
    sql.exec(
      "CREATE TABLE IF NOT EXISTS redemptions (key TEXT PRIMARY KEY, grant_id TEXT, expires_at INTEGER NOT NULL)",
    );
    sql.exec("CREATE INDEX IF NOT EXISTS redemptions_expires_at ON redemptions (expires_at)");
    // `seq` orders revocations for the isolates' copies; AUTOINCREMENT never hands out a number
    // twice, even once the newest row has been deleted.
    sql.exec(
      "CREATE TABLE IF NOT EXISTS revoked (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, expires_at INTEGER NOT NULL)",
    );
    sql.exec("CREATE INDEX IF NOT EXISTS revoked_expires_at ON revoked (expires_at)");
    // Before leases, revocations were kept without a sequence number.
    if (sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'revocations'").toArray().length > 0) {
      sql.exec("INSERT OR IGNORE INTO revoked (id, expires_at) SELECT id, expires_at FROM revocations");
      sql.exec("DROP TABLE revocations");
    }
  }

  /**
   * Admits a call of `endpoint` with `token`: token not revoked, allowed address, granted endpoint,
   * then quota; a refusal spends none. An admitted call comes with a lease for the calls after it
   * (`terms.want` of them at most). `terms.release` is handed back first, whatever the outcome.
   */
  async admit(
    clientId: string,
    ip: string | null,
    endpoint: ApiEndpoint,
    token: TokenIdentity,
    terms: LeaseTerms = NO_LEASE,
  ): Promise<Admission> {
    if (terms.release) this.handBack(terms.release.id, terms.release.used);
    const policy = await this.currentPolicy(clientId);
    if (!policy) return { outcome: "unknown_client" };
    if (this.revokedNow(token)) return { outcome: "revoked" };
    if (!ipAllowed(policy.ipAllowList, ip)) return { outcome: "ip_not_allowed" };
    if (policy.apiEndpoints !== null && !policy.apiEndpoints.includes(endpoint)) {
      return { outcome: "endpoint_not_granted" };
    }
    const now = Date.now();
    const window = await this.currentWindow(policy, now);
    const left = policy.limit - window.count;
    if (left <= 0) {
      const reset = Math.ceil((window.endsAt - now) / 1000);
      return { outcome: "rate_limited", figures: { limit: policy.limit, remaining: 0, reset } };
    }
    const revocations = this.revocationsAfter(terms.revocationsSince, now);
    const slots = revocations ? 1 + this.spareSlots(left - 1, terms.want - 1) : 1;
    let id: string | null = null;
    if (slots > 1) {
      id = `${window.endsAt}.${window.nextLease++}`;
      window.leases[id] = slots;
    }
    window.count += slots;
    this.ctx.storage.kv.put(WINDOW_KEY, window);
    const lease = this.lease(id, slots, policy, window, now, revocations ?? NO_REVOCATIONS);
    const figures = {
      limit: policy.limit,
      remaining: lease.unleased + slots - 1,
      reset: Math.ceil(lease.windowEndsInMs / 1000),
    };
    return { outcome: "admitted", figures, merchantId: policy.merchantId, lease };
  }

  /**
   * Tops up lease `id`: up to `want` more slots, a fresh policy and the revocations after
   * `revocationsSince`, for another LEASE_MS. `ended` when the lease is no longer this window's or
   * the client is gone: the holder then asks with its next call.
   */
  async renew(clientId: string, id: string, want: number, revocationsSince: number): Promise<Renewal> {
    const policy = await this.currentPolicy(clientId);
    const now = Date.now();
    const window = policy ? await this.currentWindow(policy, now) : undefined;
    if (!policy || !window || window.leases[id] === undefined) return { outcome: "ended" };
    const revocations = this.revocationsAfter(revocationsSince, now);
    if (!revocations) return { outcome: "ended" };
    const slots = this.spareSlots(policy.limit - window.count, want);
    window.leases[id] += slots;
    window.count += slots;
    this.ctx.storage.kv.put(WINDOW_KEY, window);
    return { outcome: "renewed", lease: this.lease(id, slots, policy, window, now, revocations) };
  }

  /** The holder lets lease `id` go having admitted `used` calls with it: the rest count no more. */
  async release(id: string, used: number): Promise<void> {
    this.handBack(id, used);
  }

  private handBack(id: string, used: number): void {
    const window = (this.window ??= this.ctx.storage.kv.get<Counter>(WINDOW_KEY));
    const slots = window?.leases[id];
    if (!window || slots === undefined) return;
    delete window.leases[id];
    window.count -= slots - Math.min(Math.max(used, 0), slots);
    this.ctx.storage.kv.put(WINDOW_KEY, window);
  }

  /** Slots a lease may take from `left` (a share of it, at most `want`): none once the share is under two. */
  private spareSlots(left: number, want: number): number {
    const share = Math.min(Math.floor(left / LEASE_SHARE), want, MAX_LEASE_SLOTS);
    return share >= 2 ? share : 0;
  }

  private lease(
    id: string | null,
    slots: number,
    policy: Policy,
    window: Counter,
    now: number,
    revocations: RevocationUpdate,
  ): Lease {
    const { limit, merchantId, ipAllowList, apiEndpoints } = policy;
    return {
      id,
      slots,
      validForMs: Math.min(LEASE_MS, window.endsAt - now),
      windowEndsInMs: window.endsAt - now,
      unleased: limit - window.count,
      policy: { limit, merchantId, ipAllowList, apiEndpoints },
      revocations,
    };
  }

  private async currentWindow(policy: Policy, now: number): Promise<Counter> {
    let window = (this.window ??= this.ctx.storage.kv.get<Counter>(WINDOW_KEY));
    if (!window || now >= window.endsAt) {
      window = this.window = { endsAt: now + policy.windowSeconds * 1000, count: 0, leases: {}, nextLease: 0 };
      await this.scheduleCleanup(window.endsAt);
    }
    return window;
  }

  /**
   * Counts a sign-in attempt under `key` before its proof is checked, so that parallel attempts
   * are counted too; refused once `limit` have been counted in the window. Without `origin` that
   * is all: what is never taken back (sign-in links mailed per network address), and the password
   * attempts of a Worker from before networks were counted (a rolling deploy).
   *
   * With `origin` it is a password attempt for the account `key`, and three counters are checked
   * and counted in one step: the account from this network (`limit` failures in the window, then
   * held until the window ends), the account from every network (after
   * ACCOUNT_FAILURES_BEFORE_DELAY failures, a wait before the next attempt that doubles up to
   * MAX_DELAY_MS; none for a network the account signed in from) and the network for every
   * account (NETWORK_FAILURE_LIMIT). signInSucceeded takes the attempt back.
   */
  async beginSignIn(key: string, limit = SIGN_IN_FAILURE_LIMIT, origin?: SignInOrigin): Promise<SignInAttempt> {
    if (origin) return this.beginPasswordSignIn(key, limit, origin);
    const now = Date.now();
    const [stored] = this.ctx.storage.sql
      .exec<SignInAttempts>("SELECT count, ends_at FROM sign_in_attempts WHERE account = ?", key)
      .toArray();
    const live = stored && now < stored.ends_at ? stored : undefined;
    if (live && live.count >= limit) {
      return { allowed: false, retryAfter: Math.ceil((live.ends_at - now) / 1000) };
    }
    const endsAt = live?.ends_at ?? now + SIGN_IN_WINDOW_MS;
    this.ctx.storage.sql.exec(
      "INSERT INTO sign_in_attempts (account, count, ends_at) VALUES (?, ?, ?) " +
        "ON CONFLICT (account) DO UPDATE SET count = excluded.count, ends_at = excluded.ends_at",
      key,
      (live?.count ?? 0) + 1,
      endsAt,
    );
    if (!live) await this.scheduleCleanup(endsAt);
    return { allowed: true };
  }

  private async beginPasswordSignIn(account: string, limit: number, origin: SignInOrigin): Promise<SignInAttempt> {
    const { network, caller } = origin;
    const now = Date.now();
    const fromNetwork = this.liveFailures(account, network, now);
    const ofAccount = this.liveFailures(account, EVERY, now);
    const ofNetwork = this.liveFailures(EVERY, network, now);
    const heldUntil = Math.max(
      fromNetwork && fromNetwork.count >= limit ? fromNetwork.ends_at : 0,
      ofNetwork && ofNetwork.count >= NETWORK_FAILURE_LIMIT[caller] ? ofNetwork.ends_at : 0,
      ofAccount && !this.knownNetwork(account, network, now) ? ofAccount.last_at + accountDelay(ofAccount.count) : 0,
    );
    if (heldUntil > now) return { allowed: false, retryAfter: Math.ceil((heldUntil - now) / 1000) };
    const windowEnd = now + SIGN_IN_WINDOW_MS;
    this.countFailure(account, network, fromNetwork, fromNetwork?.ends_at ?? windowEnd, now);
    this.countFailure(EVERY, network, ofNetwork, ofNetwork?.ends_at ?? windowEnd, now);
    // The account's count lasts a window past its latest failure, so that its wait holds as long
    // as the guessing goes on.
    this.countFailure(account, EVERY, ofAccount, windowEnd, now);
    if (!fromNetwork || !ofNetwork || !ofAccount) await this.scheduleCleanup(windowEnd);
    return { allowed: true };
  }

  private liveFailures(account: string, network: string, now: number): PasswordFailures | undefined {
    const [live] = this.ctx.storage.sql
      .exec<PasswordFailures>(
        "SELECT count, last_at, ends_at FROM password_failures WHERE account = ? AND network = ? AND ends_at > ?",
        account,
        network,
        now,
      )
      .toArray();
    return live;
  }

  private countFailure(
    account: string,
    network: string,
    live: PasswordFailures | undefined,
    endsAt: number,
    now: number,
  ): void {
    this.ctx.storage.sql.exec(
      "INSERT INTO password_failures (account, network, count, last_at, ends_at) VALUES (?, ?, ?, ?, ?) " +
        "ON CONFLICT (account, network) DO UPDATE SET count = excluded.count, last_at = excluded.last_at, ends_at = excluded.ends_at",
      account,
      network,
      (live?.count ?? 0) + 1,
      now,
      endsAt,
    );
  }

  private knownNetwork(account: string, network: string, now: number): boolean {
    return (
      this.ctx.storage.sql
        .exec(
          "SELECT 1 FROM known_networks WHERE account = ? AND network = ? AND expires_at > ?",
          account,
          network,
          now,
        )
        .toArray().length > 0
    );
  }

  /**
   * The password was right: the account's failures, from this network and from all, no longer
   * count, and the network is known to the account. The network's count for every account only
   * loses this attempt: one account's right password must not buy guesses at others. Without
   * `origin` (a Worker from before networks were counted) the account's attempts under
   * beginSignIn's plain count are taken back.
   */
  async signInSucceeded(account: string, origin?: SignInOrigin): Promise<void> {
    const { sql } = this.ctx.storage;
    if (!origin) {
      sql.exec("DELETE FROM sign_in_attempts WHERE account = ?", account);
      return;
    }
    const { network } = origin;
    sql.exec("DELETE FROM password_failures WHERE account = ? AND network IN (?, ?)", account, network, EVERY);
    sql.exec(
      "UPDATE password_failures SET count = count - 1 WHERE account = ? AND network = ? AND count > 0",
      EVERY,
      network,
    );
    const knownUntil = Date.now() + KNOWN_NETWORK_MS;
    sql.exec(
      "INSERT INTO known_networks (account, network, expires_at) VALUES (?, ?, ?) " +
        "ON CONFLICT (account, network) DO UPDATE SET expires_at = excluded.expires_at",
      account,
      network,
      knownUntil,
    );
    await this.scheduleCleanup(knownUntil);
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

  /** Whether a one-time value has been spent (a page that asks before spending it shows none that is). */
  async redeemed(key: string): Promise<boolean> {
    return this.ctx.storage.sql.exec("SELECT 1 FROM redemptions WHERE key = ?", key).toArray().length > 0;
  }

  /**
   * Lists access tokens as revoked until they would have expired anyway. Each listing takes a new
   * sequence number, so that isolates holding a lease learn of it when they next renew.
   */
  async revoke(revocations: Revocation[]): Promise<void> {
    for (const revocation of revocations) {
      const id = revocationId(revocation);
      this.ctx.storage.sql.exec(
        "REPLACE INTO revoked (id, expires_at) VALUES (?, max(?, coalesce((SELECT expires_at FROM revoked WHERE id = ?), 0)))",
        id,
        revocation.expiresAt,
        id,
      );
      await this.scheduleCleanup(revocation.expiresAt);
    }
  }

  /** Whether the token, or the grant it came from, has been revoked. */
  async revoked(token: TokenIdentity): Promise<boolean> {
    return this.revokedNow(token);
  }

  private revokedNow(token: TokenIdentity): boolean {
    const ids = revocationIds(token);
    const placeholders = ids.map(() => "?").join(", ");
    return (
      this.ctx.storage.sql.exec(`SELECT 1 FROM revoked WHERE id IN (${placeholders})`, ...ids).toArray().length > 0
    );
  }

  /** The live revocations listed after `since`; null when there are more than a lease may carry. */
  private revocationsAfter(since: number, now: number): RevocationUpdate | null {
    const { sql } = this.ctx.storage;
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

  /** Deletes the expired counters and records, then wakes for the next to expire, a minute on at the earliest. */
  override async alarm(): Promise<void> {
    const now = Date.now();
    this.ctx.storage.sql.exec("DELETE FROM sign_in_attempts WHERE ends_at <= ?", now);
    this.ctx.storage.sql.exec("DELETE FROM password_failures WHERE ends_at <= ?", now);
    this.ctx.storage.sql.exec("DELETE FROM known_networks WHERE expires_at <= ?", now);
    this.ctx.storage.sql.exec("DELETE FROM redemptions WHERE expires_at <= ?", now);
    this.ctx.storage.sql.exec("DELETE FROM revoked WHERE expires_at <= ?", now);
    let window = this.ctx.storage.kv.get<Counter>(WINDOW_KEY);
    if (window && now >= window.endsAt) {
      this.ctx.storage.kv.delete(WINDOW_KEY);
      window = undefined;
    }
    this.window = window;
    const { next } = this.ctx.storage.sql
      .exec<{ next: number | null }>(
        "SELECT min(next) AS next FROM (SELECT min(ends_at) AS next FROM sign_in_attempts " +
          "UNION ALL SELECT min(ends_at) FROM password_failures UNION ALL SELECT min(expires_at) FROM known_networks " +
          "UNION ALL SELECT min(expires_at) FROM redemptions UNION ALL SELECT min(expires_at) FROM revoked)",
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
