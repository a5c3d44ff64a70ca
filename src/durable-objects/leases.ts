/**
 * The isolate's side of the rate limiter's leases (durable-objects/request-window.ts). A call whose
 * client this isolate holds a live lease for is admitted here, from the lease's policy and
 * revocations, with no round trip; any other call asks the client's RateLimiter, which admits it
 * and hands over a lease for the calls after it. A lease is topped up in the background once half
 * of it is used or half its time has passed, so a steady client rarely waits on the Durable
 * Object; one that has run out is handed back with the next call that asks.
 *
 * Nothing here is awaited across requests (workerd forbids sharing I/O between them): a request
 * either finds a usable lease or asks the Durable Object itself.
 */
import type { Context } from "hono";
import type { AppEnv, Bindings, RequestTiming } from "../env";
import { logUnlessPlatformFault } from "../errors";
import { ipAllowed } from "../http/ip";
import type { ApiEndpoint } from "../schemas/api-endpoints";
import { rateLimiterFor } from "./rate-limiter";
import type {
  Admission,
  ClientPolicy,
  Lease,
  RateLimitFigures,
  Renewal,
  Revocation,
  RevocationUpdate,
  TokenIdentity,
} from "./rate-limiter-rpc";
import { LEASE_MS } from "./lease-lifetime";
import { revocationId, revocationIds } from "./revocations";

/**
 * What a lease asks for once this isolate has seen the client within LEASE_MS: an isolate that then
 * stops seeing it keeps the slots counted to the window's end (nothing hands them back), so a
 * client's first call in an isolate asks for itself alone, and busier isolates for what their
 * rate needs (wantAfter).
 */
const MIN_WANT = 4;
/** Clients an isolate keeps state for; the one seen longest ago is forgotten first. */
const MAX_CLIENTS = 1_000;

/** A lease as this isolate holds it; times by this isolate's clock. */
type HeldLease = {
  id: string;
  policy: ClientPolicy;
  slots: number;
  used: number;
  expiresAt: number;
  windowEndsAt: number;
  /** What the window had left outside leases when the Durable Object last answered. */
  unleased: number;
  /** When, and at how many calls, the lease was last granted or topped up. */
  grantedAt: number;
  usedAtGrant: number;
  renewing: boolean;
};

/** What this isolate knows of a client. */
type ClientState = {
  /** Usually one; more while calls that asked at the same time each took one. */
  leases: HeldLease[];
  /** Revoked tokens' ids to their expiry (ms), and the sequence number they run to. */
  revocations: Map<string, number>;
  seq: number;
  lastAskedAt: number;
};

const clients = new Map<string, ClientState>();

/** The admitted call's figures and merchant, or the refusal, as the Durable Object would give them. */
export type CallAdmission =
  { outcome: "admitted"; figures: RateLimitFigures; merchantId: number } | Exclude<Admission, { outcome: "admitted" }>;

/**
 * Admits a call of `endpoint` with `token` for its client: from a held lease when there is one
 * with a slot left, else by asking the client's RateLimiter.
 */
export async function admitCall(
  c: Context<AppEnv>,
  clientId: string,
  ip: string | null,
  endpoint: ApiEndpoint,
  token: TokenIdentity,
): Promise<CallAdmission> {
  const state = stateOf(clientId);
  const fromLease = admitFromLease(c, clientId, state, ip, endpoint, token);
  if (fromLease) return fromLease;
  const [spent, ...alsoSpent] = letGoOfSpentLeases(state);
  for (const lease of alsoSpent) release(c, clientId, lease);
  const now = Date.now();
  const want = spent ? wantAfter(spent) : now - state.lastAskedAt < LEASE_MS ? MIN_WANT : 1;
  state.lastAskedAt = now;
  const started = performance.now();
  let admission: Admission;
  try {
    admission = await rateLimiterFor(c.env, clientId, c.get("timing")).admit(clientId, ip, endpoint, token, {
      want,
      revocationsSince: state.seq,
      release: spent ? { id: spent.id, used: spent.used } : null,
    });
  } catch (error) {
    if (spent) release(c, clientId, spent);
    throw error;
  }
  // Calls that asked at the same time took leases: one may have a slot for this call.
  if (admission.outcome === "rate_limited") {
    return admitFromLease(c, clientId, state, ip, endpoint, token) ?? admission;
  }
  if (admission.outcome !== "admitted") return admission;
  const { figures, merchantId, lease } = admission;
  // A RateLimiter from before leases (a rolling deploy) admits this call alone.
  if (!lease) return { outcome: "admitted", figures, merchantId };
  learnRevocations(state, lease.revocations, Date.now());
  const taken = leaseFrom(lease, started);
  if (taken) state.leases.push(taken);
  return { outcome: "admitted", figures, merchantId };
}

/** The call admitted or refused from a held lease with a slot left; null when there is none. */
function admitFromLease(
  c: Context<AppEnv>,
  clientId: string,
  state: ClientState,
  ip: string | null,
  endpoint: ApiEndpoint,
  token: TokenIdentity,
): CallAdmission | null {
  const now = Date.now();
  const held = state.leases.find((lease) => now < lease.expiresAt && lease.used < lease.slots);
  if (!held) return null;
  const refusal = refusedByPolicy(held.policy, state, ip, endpoint, token, now);
  if (refusal) return { outcome: refusal };
  held.used += 1;
  const halfUsed = 2 * (held.slots - held.used) <= held.slots - held.usedAtGrant;
  const halfGone = 2 * now >= held.grantedAt + held.expiresAt;
  if (!held.renewing && (halfUsed || halfGone)) renewInBackground(c, clientId, state, held);
  return { outcome: "admitted", figures: figuresOf(held, now), merchantId: held.policy.merchantId };
}

/** Stops holding the leases that have run out (of time or slots) and returns them; their calls are final. */
function letGoOfSpentLeases(state: ClientState): HeldLease[] {
  const now = Date.now();
  const live = state.leases.filter((lease) => now < lease.expiresAt && lease.used < lease.slots);
  const spent = state.leases.filter((lease) => !live.includes(lease));
  state.leases = live;
  return spent;
}

/** Hands a lease no longer held back in the background, so that its unused slots count no more. */
function release(c: Context<AppEnv>, clientId: string, lease: HeldLease): void {
  c.executionCtx.waitUntil(
    rateLimiterFor(c.env, clientId)
      .release(lease.id, lease.used)
      .catch((error: unknown) => logFailure("release", error)),
  );
}

/**
 * Revokes access tokens at their client's RateLimiter, and in this isolate's copy at once; other
 * isolates learn of it within a lease (LEASE_MS).
 */
export async function revokeTokens(
  env: Bindings,
  clientId: string,
  revocations: Revocation[],
  timing?: RequestTiming,
): Promise<void> {
  await rateLimiterFor(env, clientId, timing).revoke(revocations);
  const state = stateOf(clientId);
  for (const revocation of revocations) remember(state, revocationId(revocation), revocation.expiresAt);
}

/**
 * The figures a lease can vouch for: what the window had left outside leases when the Durable
 * Object last answered, plus this lease's unused slots. Exact while one isolate serves the client;
 * with several, another isolate's calls since then are not in it (docs/security.md "Rate limits").
 */
function figuresOf(held: HeldLease, now: number): RateLimitFigures {
  return {
    limit: held.policy.limit,
    remaining: held.unleased + held.slots - held.used,
    reset: Math.max(0, Math.ceil((held.windowEndsAt - now) / 1000)),
  };
}

/** The refusal the Durable Object would give, from the lease's policy and the known revocations. */
function refusedByPolicy(
  policy: ClientPolicy,
  state: ClientState,
  ip: string | null,
  endpoint: ApiEndpoint,
  token: TokenIdentity,
  now: number,
): "revoked" | "ip_not_allowed" | "endpoint_not_granted" | null {
  if (revocationIds(token).some((id) => (state.revocations.get(id) ?? 0) > now)) return "revoked";
  if (!ipAllowed(policy.ipAllowList, ip)) return "ip_not_allowed";
  if (policy.apiEndpoints !== null && !policy.apiEndpoints.includes(endpoint)) return "endpoint_not_granted";
  return null;
}

/** The lease to hold from an admission that began at `started`, or null for a lease of one. */
function leaseFrom(lease: Lease, started: number): HeldLease | null {
  if (lease.id === null) return null;
  const grantedAt = Date.now() - (performance.now() - started);
  return {
    id: lease.id,
    policy: lease.policy,
    slots: lease.slots,
    used: 1,
    expiresAt: grantedAt + lease.validForMs,
    windowEndsAt: grantedAt + lease.windowEndsInMs,
    unleased: lease.unleased,
    grantedAt,
    usedAtGrant: 1,
    renewing: false,
  };
}

/** Slots for a lease's time at the rate `lease` has been used since it was granted or topped up. */
function wantAfter(lease: HeldLease): number {
  const elapsed = Math.max(1, Date.now() - lease.grantedAt);
  return Math.max(MIN_WANT, Math.ceil(((lease.used - lease.usedAtGrant) * LEASE_MS) / elapsed));
}

function renewInBackground(c: Context<AppEnv>, clientId: string, state: ClientState, held: HeldLease): void {
  held.renewing = true;
  const started = performance.now();
  const renewal = rateLimiterFor(c.env, clientId)
    .renew(clientId, held.id, wantAfter(held), state.seq)
    .then((answer: Renewal) => {
      held.renewing = false;
      if (!state.leases.includes(held)) return;
      if (answer.outcome === "ended") {
        held.expiresAt = 0;
        return;
      }
      const { lease } = answer;
      const grantedAt = Date.now() - (performance.now() - started);
      learnRevocations(state, lease.revocations, grantedAt);
      Object.assign(held, {
        policy: lease.policy,
        slots: held.slots + lease.slots,
        expiresAt: grantedAt + lease.validForMs,
        windowEndsAt: grantedAt + lease.windowEndsInMs,
        unleased: lease.unleased,
        grantedAt,
        usedAtGrant: held.used,
      });
    })
    .catch((error: unknown) => {
      // The lease runs out as granted; the next call past it asks the Durable Object itself.
      held.renewing = false;
      logFailure("renewal", error);
    });
  c.executionCtx.waitUntil(renewal);
}

function logFailure(what: "renewal" | "release", error: unknown): void {
  logUnlessPlatformFault(`rate limiter lease ${what} failed`, error);
}

/**
 * The client's state, made the most recently used. Forgetting a client is always safe: its held
 * leases' slots stay counted (erring towards refusing), and its next call asks for everything anew.
 */
function stateOf(clientId: string): ClientState {
  const state = clients.get(clientId) ?? { leases: [], revocations: new Map(), seq: -1, lastAskedAt: -Infinity };
  clients.delete(clientId);
  if (clients.size >= MAX_CLIENTS) clients.delete(clients.keys().next().value!);
  clients.set(clientId, state);
  return state;
}

function learnRevocations(state: ClientState, update: RevocationUpdate, now: number): void {
  for (const [id, expiresAt] of state.revocations) if (expiresAt <= now) state.revocations.delete(id);
  for (const { id, expiresAt } of update.entries) remember(state, id, expiresAt);
  state.seq = Math.max(state.seq, update.seq);
}

function remember(state: ClientState, id: string, expiresAt: number): void {
  state.revocations.set(id, Math.max(expiresAt, state.revocations.get(id) ?? 0));
}
