/**
 * One RateLimiter per client (idFromName(clientId)) guards every authenticated /api/2 request: it
 * checks the client's IP allow-list and endpoint grants (client-policy.ts), counts the request in
 * the client's fixed window, and tells the client's current merchant, which scopes the call. It
 * need not be asked on every request: it hands an isolate a lease (request-window.ts; the
 * isolate's side is leases.ts), a slice of the remaining quota with the client's policy and
 * revocations, valid LEASE_MS. It also throttles password sign-ins at the client
 * (password-throttle.ts), counts the sign-in links mailed per network address (sign-in-counts.ts),
 * spends the client's one-time values (redemptions.ts), rotates its grants' refresh tokens
 * (rotations.ts) and lists its revoked access tokens until they expire (revocations.ts): reads
 * here are strongly consistent, which KV's are not. This class only puts them together behind its
 * RPC methods (rate-limiter-rpc.ts). Everything survives eviction in the object's storage (the
 * window and its leases in its KV, the rest in SQLite tables indexed by expiry); one alarm, at
 * most once a minute, deletes what has expired (expiry-alarm.ts), and queues the client's
 * callbacks when they are due (callback-schedule.ts).
 */
import { DurableObject } from "cloudflare:workers";
import type { Bindings, RequestTiming } from "../env";
import { ipAllowed } from "../http/ip";
import type { ApiEndpoint } from "../schemas/api-endpoints";
import { CallbackSchedule } from "./callback-schedule";
import { PolicyCache } from "./client-policy";
import { cleanUp } from "./expiry-alarm";
import { PasswordThrottle, SIGN_IN_FAILURE_LIMIT } from "./password-throttle";
import type {
  Admission,
  LeaseTerms,
  RateLimiterRpc,
  Redemption,
  RedemptionAttempt,
  Renewal,
  Revocation,
  RevocationUpdate,
  Rotation,
  SignInAttempt,
  SignInOrigin,
  TokenIdentity,
} from "./rate-limiter-rpc";
import { Redemptions } from "./redemptions";
import { RequestWindow } from "./request-window";
import { Revocations } from "./revocations";
import { Rotations } from "./rotations";
import { SignInCounts } from "./sign-in-counts";

/**
 * The client's RateLimiter. Given the request's `timing` (outside production), each call made
 * through it is timed into Server-Timing's `do`: pass it for the calls the request waits on, never
 * for those left running in the background after the answer.
 */
export function rateLimiterFor(env: Bindings, clientId: string, timing?: RequestTiming) {
  const location = env.DURABLE_OBJECT_REGION;
  const stub = env.RATE_LIMITER.get(
    env.RATE_LIMITER.idFromName(clientId),
    location === undefined ? undefined : { locationHint: location },
  );
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

export class RateLimiter extends DurableObject<Bindings> implements RateLimiterRpc {
  private readonly policies = new PolicyCache(this.env.DB);
  private readonly requests = new RequestWindow(this.ctx.storage);
  // Each of these creates its tables, if they are not there yet, as the object starts.
  private readonly signInCounts = new SignInCounts(this.ctx.storage);
  private readonly passwordThrottle = new PasswordThrottle(this.ctx.storage);
  private readonly redemptions = new Redemptions(this.ctx.storage);
  private readonly revocations = new Revocations(this.ctx.storage);
  private readonly rotations = new Rotations(this.ctx.storage, this.revocations);
  private readonly callbacks = new CallbackSchedule(this.ctx.storage, this.env);

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
    if (terms.release) this.requests.handBack(terms.release.id, terms.release.used);
    const policy = await this.policies.current(clientId);
    if (!policy) return { outcome: "unknown_client" };
    if (this.revocations.isRevoked(token)) return { outcome: "revoked" };
    if (!ipAllowed(policy.ipAllowList, ip)) return { outcome: "ip_not_allowed" };
    if (policy.apiEndpoints !== null && !policy.apiEndpoints.includes(endpoint)) {
      return { outcome: "endpoint_not_granted" };
    }
    const now = Date.now();
    const window = await this.requests.current(policy, now);
    if (window.count >= policy.limit) {
      const reset = Math.ceil((window.endsAt - now) / 1000);
      return { outcome: "rate_limited", figures: { limit: policy.limit, remaining: 0, reset } };
    }
    const revocations = this.revocations.after(terms.revocationsSince, now);
    // More revocations than a lease may carry: a lease of one, so that every call is checked here.
    const lease = this.requests.lease(window, policy, revocations ? terms.want : 1, now, revocations ?? NO_REVOCATIONS);
    const figures = {
      limit: policy.limit,
      remaining: lease.unleased + lease.slots - 1,
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
    const policy = await this.policies.current(clientId);
    if (!policy) return { outcome: "ended" };
    const now = Date.now();
    const window = await this.requests.current(policy, now);
    const revocations = this.revocations.after(revocationsSince, now);
    const lease = revocations && this.requests.topUp(window, id, policy, want, now, revocations);
    return lease ? { outcome: "renewed", lease } : { outcome: "ended" };
  }

  /** The holder lets lease `id` go having admitted `used` calls with it: the rest count no more. */
  async release(id: string, used: number): Promise<void> {
    this.requests.handBack(id, used);
  }

  /**
   * Begins a sign-in attempt under `key` before its proof is checked; refused once `limit` have
   * been counted in the window. With `origin` it is a password attempt for the account `key`,
   * judged by the password throttle and, with `attempt`, pending until settled (signInFailed,
   * signInSucceeded, signInAbandoned); without, a plain count (sign-in-counts.ts): sign-in links
   * mailed per network address, and the password attempts of a Worker from before networks were
   * counted (a rolling deploy). A repeated call for the same `attempt` begins nothing more.
   */
  async beginSignIn(
    key: string,
    limit = SIGN_IN_FAILURE_LIMIT,
    origin?: SignInOrigin,
    attempt?: string,
  ): Promise<SignInAttempt> {
    return origin ? this.passwordThrottle.begin(key, limit, origin, attempt) : this.signInCounts.begin(key, limit);
  }

  /**
   * The password was right (password-throttle.ts says what that takes back). Without `origin` (a
   * Worker from before networks were counted) the account's plain count is taken back.
   */
  async signInSucceeded(account: string, origin?: SignInOrigin, attempt?: string): Promise<void> {
    if (origin) await this.passwordThrottle.succeeded(account, origin.network, attempt);
    else this.signInCounts.takeBack(account);
  }

  /** The password of a pending attempt was wrong: it counts as a failure from now on. */
  async signInFailed(attempt: string): Promise<void> {
    await this.passwordThrottle.failed(attempt);
  }

  /** A pending attempt ended without an outcome (a platform fault): it counts no more. */
  async signInAbandoned(attempt: string): Promise<void> {
    this.passwordThrottle.abandoned(attempt);
  }

  /** Spends, or reserves, a one-time value (an exchange code, an assertion's jti): redemptions.ts. */
  async redeemOnce(
    key: string,
    expiresAt: number,
    grant: string | null = null,
    by?: RedemptionAttempt,
  ): Promise<Redemption> {
    return this.redemptions.redeemOnce(key, expiresAt, grant, by);
  }

  /** Spends the value `attempt` reserved, once what it starts is written; false once its hold has lapsed. */
  async commitRedemption(key: string, attempt: string): Promise<boolean> {
    return this.redemptions.commit(key, attempt);
  }

  /** Lets go of the value `attempt` reserved or spent: it failed before it answered. */
  async releaseRedemption(key: string, attempt: string): Promise<void> {
    this.redemptions.release(key, attempt);
  }

  /** Whether a one-time value has been spent (a page that asks before spending it shows none that is). */
  async redeemed(key: string): Promise<boolean> {
    return this.redemptions.redeemed(key);
  }

  /** Lists access tokens as revoked until they would have expired anyway (revocations.ts). */
  async revoke(revocations: Revocation[]): Promise<void> {
    await this.revocations.revoke(revocations);
  }

  /** Whether the token, or the grant it came from, has been revoked. */
  async revoked(token: TokenIdentity): Promise<boolean> {
    return this.revocations.isRevoked(token);
  }

  /**
   * Whether a grant has ended, asked by each refresh and introspection of a persistent refresh
   * token (revocations.ts).
   */
  async grantEnded(grant: string): Promise<boolean> {
    return this.revocations.isGrantEnded(grant);
  }

  /**
   * Rotates the grant's refresh token of `generation` (rotations.ts) if it is the current one, or,
   * with `replacing`, replaces that successor of it, still current and unused, within the grace
   * window. `now` (Unix seconds) is the rotation's time, which judges the window; `keepUntilMs`
   * when the successor expires.
   */
  async rotateGrant(
    grant: string,
    generation: number,
    now: number,
    keepUntilMs: number,
    replacing?: number,
  ): Promise<Rotation> {
    return this.rotations.rotate({ grant, generation, now, keepUntilMs, replacing });
  }

  /** The grant's current generation (0 before its first rotation); null once it has ended. */
  async grantGeneration(grant: string): Promise<number | null> {
    return this.rotations.current(grant);
  }

  /** A change the client is to be told of waits in D1 (callback-schedule.ts). */
  async callbacksChanged(clientId: string): Promise<void> {
    await this.callbacks.changed(clientId, Date.now());
  }

  /** The delivery queued as try `attempt` settled; `more`: changes still wait. */
  async callbacksSettled(attempt: number, more: boolean): Promise<void> {
    await this.callbacks.settled(attempt, more, Date.now());
  }

  override async alarm(): Promise<void> {
    const callbacksDue = await this.callbacks.wake(Date.now());
    await cleanUp(this.ctx.storage, callbacksDue, [
      this.requests,
      this.signInCounts,
      this.passwordThrottle,
      this.redemptions,
      this.revocations,
      this.rotations,
    ]);
  }
}
