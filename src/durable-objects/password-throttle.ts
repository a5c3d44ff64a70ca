/**
 * The password throttle at a client, so that its login page and token endpoint can be used neither
 * to guess passwords without limit nor to lock a user out. Three counters of failed password
 * sign-ins are checked and counted in one step, before the password is (so that parallel attempts
 * are counted too): the account from this network (SIGN_IN_FAILURE_LIMIT failures in the window,
 * then held until the window ends), the account from every network (after
 * ACCOUNT_FAILURES_BEFORE_DELAY failures, a wait before the next attempt that doubles up to
 * MAX_DELAY_MS; none for a network the account signed in from) and the network for every account
 * (NETWORK_FAILURE_LIMIT). A right password takes the attempt back. Spraying across clients is
 * counted per client, each in its own object. Tables `password_failures` (EVERY in its account or
 * network column counts across all of them) and `known_networks`.
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

/** A password_failures row: failures counted until `ends_at`, the latest at `last_at`. */
type PasswordFailures = { count: number; last_at: number; ends_at: number };

/** The wait after an account's latest failure, once it has `failures` from all networks in the window. */
function accountDelay(failures: number): number {
  if (failures < ACCOUNT_FAILURES_BEFORE_DELAY) return 0;
  return Math.min(FIRST_DELAY_MS * 2 ** (failures - ACCOUNT_FAILURES_BEFORE_DELAY), MAX_DELAY_MS);
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
      "CREATE TABLE IF NOT EXISTS known_networks (account TEXT NOT NULL, network TEXT NOT NULL, " +
        "expires_at INTEGER NOT NULL, PRIMARY KEY (account, network))",
    );
    sql.exec("CREATE INDEX IF NOT EXISTS known_networks_expires_at ON known_networks (expires_at)");
  }

  /**
   * Counts a password attempt at `account` from `origin` as a failure, unless one of the three
   * counters holds it; `limit` is the account's from this network.
   */
  async begin(account: string, limit: number, origin: SignInOrigin): Promise<SignInAttempt> {
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
    if (!fromNetwork || !ofNetwork || !ofAccount) await scheduleCleanup(this.storage, windowEnd);
    return { allowed: true };
  }

  /**
   * The password was right: the account's failures, from this network and from all, no longer
   * count, and the network is known to the account. The network's count for every account only
   * loses this attempt: one account's right password must not buy guesses at others.
   */
  async succeeded(account: string, network: string): Promise<void> {
    const { sql } = this.storage;
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
    await scheduleCleanup(this.storage, knownUntil);
  }

  deleteExpired(now: number): void {
    this.storage.sql.exec("DELETE FROM password_failures WHERE ends_at <= ?", now);
    this.storage.sql.exec("DELETE FROM known_networks WHERE expires_at <= ?", now);
  }

  nextExpiry(): number | null {
    return this.storage.sql
      .exec<{ next: number | null }>(
        "SELECT min(next) AS next FROM (SELECT min(ends_at) AS next FROM password_failures " +
          "UNION ALL SELECT min(expires_at) FROM known_networks)",
      )
      .one().next;
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

  private countFailure(
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
