/**
 * The isolate's side of the rate limiter's leases (durable-objects/rate-limiter.ts). A call whose
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
import type { AppEnv, Bindings } from "../env";
import { ipAllowed } from "../http/ip";
import type { ApiEndpoint } from "../schemas/api-endpoints";
import {
  type Admission,
  type ClientPolicy,
  type Lease,
  type RateLimitFigures,
  type Renewal,
  type Revocation,
  type RevocationUpdate,
  type TokenIdentity,
  LEASE_MS,
  rateLimiterFor,
  revocationId,
  revocationIds,
} from "./rate-limiter";

/**
 * The least a lease asks for. An isolate that then stops seeing the client keeps these slots
 * counted to the window's end (nothing hands them back), so it is small; busier isolates ask for
 * what their rate needs (wantAfter).
 */
const MIN_WANT = 4;

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

/** The revocations of a client this isolate knows of: id to expiry (ms), and the sequence number they run to. */
type KnownRevocations = { seq: number; expiries: Map<string, number> };

/** Usually one per client; more while calls that asked at the same time each took one. */
const heldLeases = new Map<string, HeldLease[]>();
const knownRevocations = new Map<string, KnownRevocations>();

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
  const fromLease = admitFromLease(c, clientId, ip, endpoint, token);
  if (fromLease) return fromLease;
  const [spent, ...alsoSpent] = letGoOfSpentLeases(clientId);
  for (const lease of alsoSpent)
    c.executionCtx.waitUntil(rateLimiterFor(c.env, clientId).release(lease.id, lease.used));
  const want = spent ? wantAfter(spent) : MIN_WANT;
  const started = performance.now();
  const admission = await timedCall(c, async (): Promise<Admission> =>
    rateLimiterFor(c.env, clientId).admit(clientId, ip, endpoint, token, {
      want,
      revocationsSince: knownRevocationsOf(clientId).seq,
      release: spent ? { id: spent.id, used: spent.used } : null,
    }),
  );
  // Calls that asked at the same time took leases: one may have a slot for this call.
  if (admission.outcome === "rate_limited") return admitFromLease(c, clientId, ip, endpoint, token) ?? admission;
  if (admission.outcome !== "admitted") return admission;
  const { lease } = admission;
  learnRevocations(clientId, lease.revocations, Date.now());
  const taken = leaseFrom(lease, started);
  if (taken) heldLeases.set(clientId, [...(heldLeases.get(clientId) ?? []), taken]);
  const figures = {
    limit: lease.policy.limit,
    remaining: lease.unleased + lease.slots - 1,
    reset: Math.ceil(lease.windowEndsInMs / 1000),
  };
  return { outcome: "admitted", figures, merchantId: lease.policy.merchantId };
}

/** The call admitted or refused from a held lease with a slot left; null when there is none. */
function admitFromLease(
  c: Context<AppEnv>,
  clientId: string,
  ip: string | null,
  endpoint: ApiEndpoint,
  token: TokenIdentity,
): CallAdmission | null {
  const now = Date.now();
  const held = heldLeases.get(clientId)?.find((lease) => now < lease.expiresAt && lease.used < lease.slots);
  if (!held) return null;
  const refusal = refusedByPolicy(held.policy, clientId, ip, endpoint, token, now);
  if (refusal) return { outcome: refusal };
  held.used += 1;
  const halfUsed = 2 * (held.slots - held.used) <= held.slots - held.usedAtGrant;
  const halfGone = 2 * now >= held.grantedAt + held.expiresAt;
  if (!held.renewing && (halfUsed || halfGone)) renewInBackground(c, clientId, held);
  return { outcome: "admitted", figures: figuresOf(held, now), merchantId: held.policy.merchantId };
}

/** Stops holding the client's leases that have run out (of time or slots) and returns them; their calls are final. */
function letGoOfSpentLeases(clientId: string): HeldLease[] {
  const now = Date.now();
  const held = heldLeases.get(clientId) ?? [];
  const live = held.filter((lease) => now < lease.expiresAt && lease.used < lease.slots);
  if (live.length > 0) heldLeases.set(clientId, live);
  else heldLeases.delete(clientId);
  return held.filter((lease) => !live.includes(lease));
}

/**
 * Revokes access tokens at their client's RateLimiter, and in this isolate's copy at once; other
 * isolates learn of it within a lease (LEASE_MS).
 */
export async function revokeTokens(env: Bindings, clientId: string, revocations: Revocation[]): Promise<void> {
  await rateLimiterFor(env, clientId).revoke(revocations);
  const known = knownRevocationsOf(clientId);
  for (const revocation of revocations) remember(known, revocationId(revocation), revocation.expiresAt);
}

/**
 * The figures a lease can vouch for: what the window had left outside leases when the Durable
 * Object last answered, plus this lease's unused slots. Exact while one isolate serves the client;
 * with several, another isolate's calls since then are not in it (README "Rate limits").
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
  clientId: string,
  ip: string | null,
  endpoint: ApiEndpoint,
  token: TokenIdentity,
  now: number,
): "revoked" | "ip_not_allowed" | "endpoint_not_granted" | null {
  const { expiries } = knownRevocationsOf(clientId);
  if (revocationIds(token).some((id) => (expiries.get(id) ?? 0) > now)) return "revoked";
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

function renewInBackground(c: Context<AppEnv>, clientId: string, held: HeldLease): void {
  held.renewing = true;
  const want = wantAfter(held);
  const started = performance.now();
  const renewal = rateLimiterFor(c.env, clientId)
    .renew(clientId, held.id, want, knownRevocationsOf(clientId).seq)
    .then((answer: Renewal) => {
      held.renewing = false;
      if (!heldLeases.get(clientId)?.includes(held)) return;
      if (answer.outcome === "ended") {
        held.expiresAt = 0;
        return;
      }
      const { lease } = answer;
      const grantedAt = Date.now() - (performance.now() - started);
      learnRevocations(clientId, lease.revocations, grantedAt);
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
      console.error("rate limiter lease renewal failed:", error instanceof Error ? error.message : String(error));
    });
  c.executionCtx.waitUntil(renewal);
}

async function timedCall<T>(c: Context<AppEnv>, call: () => Promise<T>): Promise<T> {
  const timing = c.get("timing");
  const started = performance.now();
  try {
    return await call();
  } finally {
    if (timing) {
      timing.durableObjectMs += performance.now() - started;
      timing.durableObjectCalls += 1;
    }
  }
}

function knownRevocationsOf(clientId: string): KnownRevocations {
  let known = knownRevocations.get(clientId);
  if (!known) knownRevocations.set(clientId, (known = { seq: -1, expiries: new Map() }));
  return known;
}

function learnRevocations(clientId: string, update: RevocationUpdate, now: number): void {
  const known = knownRevocationsOf(clientId);
  for (const [id, expiresAt] of known.expiries) if (expiresAt <= now) known.expiries.delete(id);
  for (const { id, expiresAt } of update.entries) remember(known, id, expiresAt);
  known.seq = Math.max(known.seq, update.seq);
}

function remember(known: KnownRevocations, id: string, expiresAt: number): void {
  known.expiries.set(id, Math.max(expiresAt, known.expiries.get(id) ?? 0));
}
