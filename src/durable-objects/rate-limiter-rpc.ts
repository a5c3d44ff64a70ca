/**
 * What a client's RateLimiter answers over RPC (durable-objects/rate-limiter.ts implements it): the
 * methods and every type their calls carry. The binding is typed by this interface, not by the
 * class, so that env.ts needs nothing that needs env.ts. Isolates of the old and the new version
 * call each other during a rolling deploy: a method keeps its name, and a change to what it takes
 * or answers must be understood by both.
 */
import type { ApiEndpoint } from "../schemas/api-endpoints";

export interface RateLimiterRpc extends Rpc.DurableObjectBranded {
  admit(
    clientId: string,
    ip: string | null,
    endpoint: ApiEndpoint,
    token: TokenIdentity,
    terms?: LeaseTerms,
  ): Promise<Admission>;
  renew(clientId: string, id: string, want: number, revocationsSince: number): Promise<Renewal>;
  release(id: string, used: number): Promise<void>;
  beginSignIn(key: string, limit?: number, origin?: SignInOrigin, attempt?: string): Promise<SignInAttempt>;
  signInSucceeded(account: string, origin?: SignInOrigin, attempt?: string): Promise<void>;
  signInFailed(attempt: string): Promise<void>;
  signInAbandoned(attempt: string): Promise<void>;
  redeemOnce(key: string, expiresAt: number, grant?: string | null, by?: RedemptionAttempt): Promise<Redemption>;
  commitRedemption(key: string, attempt: string): Promise<boolean>;
  releaseRedemption(key: string, attempt: string): Promise<void>;
  redeemed(key: string): Promise<boolean>;
  revoke(revocations: Revocation[]): Promise<void>;
  revoked(token: TokenIdentity): Promise<boolean>;
  grantEnded(grant: string): Promise<boolean>;
  rotateGrant(
    grant: string,
    generation: number,
    now: number,
    keepUntilMs: number,
    replacing?: number,
  ): Promise<Rotation>;
  grantGeneration(grant: string): Promise<number | null>;
  callbacksChanged(clientId: string): Promise<void>;
  callbacksSettled(attempt: number, more: boolean): Promise<void>;
}

/** What the container's `request` object and the X-RateLimit-* headers report. */
export type RateLimitFigures = {
  limit: number;
  remaining: number;
  /** Seconds until the current window ends and the quota is whole again. */
  reset: number;
};

/** What an isolate checks a call against while it holds a lease. */
export type ClientPolicy = {
  limit: number;
  merchantId: number;
  ipAllowList: string[];
  /** Null when the client may call every endpoint. */
  apiEndpoints: ApiEndpoint[] | null;
};

/** Revocations listed after `since` (a sequence number), with the sequence number they run to. */
export type RevocationUpdate = { seq: number; entries: { id: string; expiresAt: number }[] };

/**
 * A lease: `slots` calls (the one that asked among them) the holder may admit within `validForMs`,
 * and no later than the window's end. `id` is null for a lease of one, which has nothing to hand back.
 */
export type Lease = {
  id: string | null;
  slots: number;
  validForMs: number;
  windowEndsInMs: number;
  /** What the window has left once this lease's slots are counted. */
  unleased: number;
  policy: ClientPolicy;
  revocations: RevocationUpdate;
};

/** What the isolate asks for with a call, and the lease it lets go (its calls admitted, final). */
export type LeaseTerms = {
  want: number;
  revocationsSince: number;
  release: { id: string; used: number } | null;
};

/**
 * An admitted call carries its figures and merchant as well as its lease, so that a caller from
 * before leases (during a rolling deploy) reads what it always read.
 */
export type Admission =
  | { outcome: "admitted"; figures: RateLimitFigures; merchantId: number; lease: Lease }
  | { outcome: "rate_limited"; figures: RateLimitFigures }
  | { outcome: "ip_not_allowed" | "unknown_client" | "endpoint_not_granted" | "revoked" };

/** A top-up of a held lease: more slots (possibly none) and a fresh policy, time and revocations. */
export type Renewal = { outcome: "renewed"; lease: Lease } | { outcome: "ended" };

/**
 * A sign-in attempt begun, or held off for `retryAfter` seconds. A `pending` password attempt
 * counts as in progress until its caller settles it (signInFailed, signInSucceeded,
 * signInAbandoned), and as a failure only once signInFailed says so; left unsettled it stops
 * counting after a few seconds (password-throttle.ts). Without `pending` (a plain count, or a
 * RateLimiter from before attempts were settled) it was counted as it began.
 */
export type SignInAttempt = { allowed: true; pending?: true } | { allowed: false; retryAfter: number };

/**
 * Where a password sign-in comes from: the network (one IPv4 address, one IPv6 /64, or "unknown")
 * and whose it is: the person's browser (the login page) or the client's server (the token endpoint).
 */
export type SignInOrigin = { network: string; caller: "browser" | "client server" };

/**
 * What a revocation may name: an access token (`jti`), the grant it came from, or both; a grant
 * alone is a grant being started (a redemption's refresh-token family, a webview's session).
 */
export type TokenIdentity = { jti: string | null; grant: string | null };

/**
 * A revocation, kept until `expiresAt` (ms): of one access token (`jti`), or of every access token
 * of a grant; `persistent` when the grant's refresh tokens are self-contained ones (or may be),
 * which are checked against the grant's end here (the name is from when only persistent ones were).
 */
export type Revocation =
  { jti: string; expiresAt: number } | { grant: string; expiresAt: number; persistent?: boolean };

/**
 * Who spends a one-time value: the request's attempt `id`, which its repeated calls share. With
 * `reserve` the value is held for it while it writes what the value starts, and spent when it
 * commits it (commitRedemption) before the hold lapses; once it has lapsed the commit is refused,
 * whether or not another attempt has taken the value over, so that only one attempt answers.
 * Without `reserve` it is spent at once. An attempt that fails before it answers (a refused
 * commit among its failures) lets the value go (releaseRedemption). During a rolling deploy, a
 * RateLimiter from before lapsed commits were refused refuses one only when another attempt took
 * the value over (still one answer); an isolate from before takes a refused commit for a replay:
 * it revokes its own grant and answers invalid_grant without releasing the value, so that a
 * taker's grant stays live unless a later replay revokes it, as it did before.
 */
export type RedemptionAttempt = { id: string; reserve: boolean };

/**
 * The outcome of spending a one-time value: `redeemed` (spent) or `reserved` (held for the
 * attempt) the first time before it expires; `expired` from its expiry on; `held` while another
 * attempt holds it, for `retryAfter` seconds at most; `replayed` after a first redemption, with
 * the grant that one started, so that the caller can revoke it (RFC 6749 §4.1.2). A RateLimiter
 * from before reservations answers `redeemed` to a reservation too: the value is spent.
 */
export type Redemption =
  | { outcome: "redeemed" }
  | { outcome: "reserved" }
  | { outcome: "expired" }
  | { outcome: "held"; retryAfter: number }
  | { outcome: "replayed"; grant: string | null };

/**
 * The outcome of a grant's rotation: `rotated` to the generation the successor carries; `ended`
 * for a grant that has ended; `behind` when it did not advance (an earlier token, or a successor
 * no longer to replace), with the grant's state for the caller to judge: its current generation,
 * the one presented to make it, and when (Unix seconds; null before the first rotation).
 */
export type Rotation =
  | { outcome: "rotated"; generation: number }
  | { outcome: "ended" }
  | { outcome: "behind"; current: number; madeFrom: number | null; rotatedAt: number | null };
