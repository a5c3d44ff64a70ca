/**
 * The password throttle at a client, so that its login page and token endpoint can be used neither
 * to guess passwords without limit nor to lock a user out. Three counters of failed password
 * sign-ins: the account from this network (SIGN_IN_FAILURE_LIMIT failures in the window, then held
 * until the window ends), the account from every network (after ACCOUNT_FAILURES_BEFORE_DELAY
 * failures, a wait before the next attempt that doubles up to MAX_DELAY_MS; none for a network
 * the account signed in from) and the network for every account (NETWORK_FAILURE_LIMIT). An
 * attempt is checked against them and recorded as pending in one step, before the password is
 * checked, and pending attempts count as failures in every check (so that parallel attempts are
 * counted too). The caller settles it: a wrong password becomes a failure before anyone is told
 * (so no guess is answered uncounted), a right one clears the account's failures; an attempt left
 * unsettled, whose request a fault ended before it answered, stops counting after
 * SIGN_IN_SETTLE_MS, so that a storage fault is never a failed password. Each call names its
 * attempt and lands once however often it is repeated. Spraying across clients is counted per
 * client, each in its own object. Tables `password_failures` (EVERY in its account or network
 * column counts across all of them), `password_attempts` (pending) and `known_networks`.
 */
import { type ExpiringRecords, scheduleCleanup } from "./expiry-alarm";
import type { SignInAttempt, SignInOrigin } from "./rate-limiter-rpc";
import { SIGN_IN_WINDOW_MS } from "./sign-in-counts";

/**
 * Failed password sign-ins for one account from one network before that pair is held for the
 * rest of the window: what one network may guess at one account.
 */
export const SIGN_IN_FAILURE_LIMIT = 5;
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
 * How long a pending attempt counts unsettled: longer than a request takes from its begin to its
 * outcome (the begin's answer and the outcome's call, each within the platform's 3 s deadline,
 * and a password hash between). An outcome that comes later still lands.
 */
export const SIGN_IN_SETTLE_MS = 10_000;

/** A password_failures row: failures counted until `ends_at`, the latest at `last_at`. */
type PasswordFailures = { count: number; last_at: number; ends_at: number };

/** A counter's pending attempts: how many, when the first is due to be settled, when the latest began. */
type PendingAttempts = { count: number; settle_by: number | null; last_at: number | null };

/** The wait after an account's latest failure, once it has `failures` from all networks in the window. */
function accountDelay(failures: number): number {
  if (failures < ACCOUNT_FAILURES_BEFORE_DELAY) return 0;
  return Math.min(FIRST_DELAY_MS * 2 ** (failures - ACCOUNT_FAILURES_BEFORE_DELAY), MAX_DELAY_MS);
}

/**
 * Until when a counter holds the next attempt, at `limit`: its failures, to the window's end; its
 * failures with its pending attempts, until the first of those is due to be settled.
 */
function heldUntil(failures: PasswordFailures | undefined, pending: PendingAttempts, limit: number): number {
  const counted = failures?.count ?? 0;
  if (failures && counted >= limit) return failures.ends_at;
  return counted + pending.count >= limit ? (pending.settle_by ?? 0) : 0;
}

export class PasswordThrottle implements ExpiringRecords {
  constructor(private readonly storage: DurableObjectStorage) {
    const { sql } = storage;
    sql.exec(
      "CREATE TABLE IF NOT EXISTS password_failures (account TEXT NOT NULL, network TEXT NOT NULL, " +
        "count INTEGER NOT NULL, last_at INTEGER NOT NULL, ends_at INTEGER NOT NULL, PRIMARY KEY (account, network))",
    );
    sql.exec("CREATE INDEX IF NOT EXISTS password_failures_ends_at ON password_failures (ends_at)");
    sql.exec(
      "CREATE TABLE IF NOT EXISTS password_attempts (attempt TEXT PRIMARY KEY, account TEXT NOT NULL, " +
        "network TEXT NOT NULL, begun_at INTEGER NOT NULL, settle_by INTEGER NOT NULL, ends_at INTEGER NOT NULL)",
    );
    sql.exec("CREATE INDEX IF NOT EXISTS password_attempts_ends_at ON password_attempts (ends_at)");
    sql.exec(
      "CREATE TABLE IF NOT EXISTS known_networks (account TEXT NOT NULL, network TEXT NOT NULL, " +
        "expires_at INTEGER NOT NULL, PRIMARY KEY (account, network))",
    );
    sql.exec("CREATE INDEX IF NOT EXISTS known_networks_expires_at ON known_networks (expires_at)");
  }

  /**
   * Begins `attempt`, a password attempt at `account` from `origin`, unless one of the three
   * counters holds it; `limit` is the account's from this network. Without `attempt` (a Worker
   * from before attempts were settled) it is counted as a failure at once.
   */
  async begin(account: string, limit: number, origin: SignInOrigin, attempt?: string): Promise<SignInAttempt> {
    const { network, caller } = origin;
    const now = Date.now();
    if (attempt !== undefined && this.hasBegun(attempt)) return { allowed: true, pending: true };
    const ofAccount = this.liveFailures(account, EVERY, now);
    const accountPending = this.pendingAttempts(account, EVERY, now);
    const accountFailures = (ofAccount?.count ?? 0) + accountPending.count;
    const accountLastAt = Math.max(ofAccount?.last_at ?? 0, accountPending.last_at ?? 0);
    const held = Math.max(
      heldUntil(this.liveFailures(account, network, now), this.pendingAttempts(account, network, now), limit),
      heldUntil(
        this.liveFailures(EVERY, network, now),
        this.pendingAttempts(EVERY, network, now),
        NETWORK_FAILURE_LIMIT[caller],
      ),
      accountFailures > 0 && !this.knownNetwork(account, network, now)
        ? accountLastAt + accountDelay(accountFailures)
        : 0,
    );
    if (held > now) return { allowed: false, retryAfter: Math.ceil((held - now) / 1000) };
    if (attempt === undefined) {
      await this.countFailure(account, network, now);
      return { allowed: true };
    }
    const endsAt = now + SIGN_IN_WINDOW_MS;
    this.storage.sql.exec(
      "INSERT INTO password_attempts (attempt, account, network, begun_at, settle_by, ends_at) VALUES (?, ?, ?, ?, ?, ?)",
      attempt,
      account,
      network,
      now,
      now + SIGN_IN_SETTLE_MS,
      endsAt,
    );
    await scheduleCleanup(this.storage, endsAt);
    return { allowed: true, pending: true };
  }

  /** The password of `attempt` was wrong: a failure on all three counters, however late. */
  async failed(attempt: string): Promise<void> {
    const [settled] = this.storage.sql
      .exec<{ account: string; network: string }>(
        "DELETE FROM password_attempts WHERE attempt = ? RETURNING account, network",
        attempt,
      )
      .toArray();
    if (settled) await this.countFailure(settled.account, settled.network, Date.now());
  }

  /**
   * The password was right: the account's failures, from this network and from all, no longer
   * count, and the network is known to the account. The network's count for every account never
   * had this attempt (without `attempt`, a Worker from before attempts were settled, it loses it):
   * one account's right password must not buy guesses at others.
   */
  async succeeded(account: string, network: string, attempt?: string): Promise<void> {
    const { sql } = this.storage;
    sql.exec("DELETE FROM password_failures WHERE account = ? AND network IN (?, ?)", account, network, EVERY);
    if (attempt === undefined) {
      sql.exec(
        "UPDATE password_failures SET count = count - 1 WHERE account = ? AND network = ? AND count > 0",
        EVERY,
        network,
      );
    } else sql.exec("DELETE FROM password_attempts WHERE attempt = ?", attempt);
    const knownUntil = Date.now() + KNOWN_NETWORK_MS;
    sql.exec(
      "INSERT INTO known_networks (account, network, expires_at) VALUES (?, ?, ?) " +
        "ON CONFLICT (account, network) DO UPDATE SET expires_at = excluded.expires_at",
      account,
      network,
      knownUntil,
    );
    await scheduleCleanup(this.storage, knownUntil);
  }

  /** `attempt` ended without an outcome (a fault): it counts no more; one settled stays as it is. */
  abandoned(attempt: string): void {
    this.storage.sql.exec("DELETE FROM password_attempts WHERE attempt = ?", attempt);
  }

  deleteExpired(now: number): void {
    this.storage.sql.exec("DELETE FROM password_failures WHERE ends_at <= ?", now);
    this.storage.sql.exec("DELETE FROM password_attempts WHERE ends_at <= ?", now);
    this.storage.sql.exec("DELETE FROM known_networks WHERE expires_at <= ?", now);
  }

  nextExpiry(): number | null {
    return this.storage.sql
      .exec<{ next: number | null }>(
        "SELECT min(next) AS next FROM (SELECT min(ends_at) AS next FROM password_failures " +
          "UNION ALL SELECT min(ends_at) FROM password_attempts UNION ALL SELECT min(expires_at) FROM known_networks)",
      )
      .one().next;
  }

  /** Counts a failure of `account` from `network` on the three counters. */
  private async countFailure(account: string, network: string, now: number): Promise<void> {
    const windowEnd = now + SIGN_IN_WINDOW_MS;
    const fromNetwork = this.liveFailures(account, network, now);
    const ofNetwork = this.liveFailures(EVERY, network, now);
    const ofAccount = this.liveFailures(account, EVERY, now);
    this.addFailure(account, network, fromNetwork, fromNetwork?.ends_at ?? windowEnd, now);
    this.addFailure(EVERY, network, ofNetwork, ofNetwork?.ends_at ?? windowEnd, now);
    // The account's count lasts a window past its latest failure, so that its wait holds as long
    // as the guessing goes on.
    this.addFailure(account, EVERY, ofAccount, windowEnd, now);
    if (!fromNetwork || !ofNetwork || !ofAccount) await scheduleCleanup(this.storage, windowEnd);
  }

  private liveFailures(account: string, network: string, now: number): PasswordFailures | undefined {
    const [live] = this.storage.sql
      .exec<PasswordFailures>(
        "SELECT count, last_at, ends_at FROM password_failures WHERE account = ? AND network = ? AND ends_at > ?",
        account,
        network,
        now,
      )
      .toArray();
    return live;
  }

  /** The pending attempts a counter counts (EVERY for all accounts or networks), unsettled ones until their time is up. */
  private pendingAttempts(account: string, network: string, now: number): PendingAttempts {
    return this.storage.sql
      .exec<PendingAttempts>(
        "SELECT count(*) AS count, min(settle_by) AS settle_by, max(begun_at) AS last_at FROM password_attempts " +
          `WHERE settle_by > ? AND (? = '${EVERY}' OR account = ?) AND (? = '${EVERY}' OR network = ?)`,
        now,
        account,
        account,
        network,
        network,
      )
      .one();
  }

  private hasBegun(attempt: string): boolean {
    return this.storage.sql.exec("SELECT 1 FROM password_attempts WHERE attempt = ?", attempt).toArray().length > 0;
  }

  private addFailure(
    account: string,
    network: string,
    live: PasswordFailures | undefined,
    endsAt: number,
    now: number,
  ): void {
    this.storage.sql.exec(
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
      this.storage.sql
        .exec(
          "SELECT 1 FROM known_networks WHERE account = ? AND network = ? AND expires_at > ?",
          account,
          network,
          now,
        )
        .toArray().length > 0
    );
  }
}
