/**
 * The client's fixed request window and the leases handed out of it (the isolate's side of a
 * lease is leases.ts). A lease's slots are counted in the window when they are handed out, and
 * those left unused are handed back when the isolate lets the lease go. A lease takes a share of
 * what is left; when that share is under two requests the lease is of one, and every call asks, as
 * exactly as a counter can. The window lives in the object's KV under `window`
 * (scripts/lib/rate-limiter-state.ts reads it there).
 */
import type { Policy } from "./client-policy";
import { type ExpiringRecords, scheduleCleanup } from "./expiry-alarm";
import { LEASE_MS } from "./lease-lifetime";
import type { Lease, RevocationUpdate } from "./rate-limiter-rpc";
/**
 * A lease takes at most this share of what is left in the window, so other isolates find quota
 * too; once that share is under two requests, leases are of one.
 */
const LEASE_SHARE = 8;
const MAX_LEASE_SLOTS = 10_000;
const WINDOW_KEY = "window";

/**
 * The client's request window: `count` is every slot handed out in it, used or still leased;
 * `leases` the slots of each lease not yet handed back, by id.
 */
export type Counter = { endsAt: number; count: number; leases: Record<string, number>; nextLease: number };

export class RequestWindow implements ExpiringRecords {
  private window: Counter | undefined;

  constructor(private readonly storage: DurableObjectStorage) {}

  /** The window at `now`: the stored one, or a new one of the policy's length once that has ended. */
  async current(policy: Policy, now: number): Promise<Counter> {
    let window = this.stored();
    if (!window || now >= window.endsAt) {
      window = this.window = { endsAt: now + policy.windowSeconds * 1000, count: 0, leases: {}, nextLease: 0 };
      await scheduleCleanup(this.storage, window.endsAt);
    }
    return window;
  }

  /**
   * Counts an admitted call with a lease for up to `want - 1` calls after it. The window must have
   * a slot left.
   */
  lease(window: Counter, policy: Policy, want: number, now: number, revocations: RevocationUpdate): Lease {
    const slots = 1 + spareSlots(policy.limit - window.count - 1, want - 1);
    let id: string | null = null;
    if (slots > 1) {
      id = `${window.endsAt}.${window.nextLease++}`;
      window.leases[id] = slots;
    }
    window.count += slots;
    this.storage.kv.put(WINDOW_KEY, window);
    return leaseOf(id, slots, policy, window, now, revocations);
  }

  /**
   * Tops up lease `id` with up to `want` more slots (possibly none); null when the lease is not
   * `window`'s: handed back, or of a window that has ended.
   */
  topUp(
    window: Counter,
    id: string,
    policy: Policy,
    want: number,
    now: number,
    revocations: RevocationUpdate,
  ): Lease | null {
    const held = window.leases[id];
    if (held === undefined) return null;
    const slots = spareSlots(policy.limit - window.count, want);
    window.leases[id] = held + slots;
    window.count += slots;
    this.storage.kv.put(WINDOW_KEY, window);
    return leaseOf(id, slots, policy, window, now, revocations);
  }

  /** Lease `id` comes back having admitted `used` calls: the rest count no more. */
  handBack(id: string, used: number): void {
    const window = this.stored();
    const slots = window?.leases[id];
    if (!window || slots === undefined) return;
    delete window.leases[id];
    window.count -= slots - Math.min(Math.max(used, 0), slots);
    this.storage.kv.put(WINDOW_KEY, window);
  }

  deleteExpired(now: number): void {
    let window = this.storage.kv.get<Counter>(WINDOW_KEY);
    if (window && now >= window.endsAt) {
      this.storage.kv.delete(WINDOW_KEY);
      window = undefined;
    }
    this.window = window;
  }

  nextExpiry(): number | null {
    return this.stored()?.endsAt ?? null;
  }

  private stored(): Counter | undefined {
    return (this.window ??= this.storage.kv.get<Counter>(WINDOW_KEY));
  }
}

/** Slots a lease may take from `left` (a share of it, at most `want`): none once the share is under two. */
function spareSlots(left: number, want: number): number {
  const share = Math.min(Math.floor(left / LEASE_SHARE), want, MAX_LEASE_SLOTS);
  return share >= 2 ? share : 0;
}

function leaseOf(
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
    // Only what the isolate checks: the policy travels over RPC.
    policy: { limit, merchantId, ipAllowList, apiEndpoints },
    revocations,
  };
}
