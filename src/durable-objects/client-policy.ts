/**
 * The client's policy as its RateLimiter applies it: merchant, quota and window, IP allow-list and
 * endpoint grants, read from D1 at most every POLICY_TTL_MS (one object per client, so one policy).
 */
import { openDatabase } from "../db/client";
import { findClientPolicy } from "../db/queries/clients";
import type { RateLimitSetting } from "../db/schema";
import type { ClientPolicy } from "./rate-limiter-rpc";

/** Quota for clients without a `rateLimit` of their own. */
export const DEFAULT_RATE_LIMIT: RateLimitSetting = { limit: 1000, windowSeconds: 3600 };
/** How old the client's policy may be here; with LEASE_MS, the bound on a policy change reaching every call. */
export const POLICY_TTL_MS = 5_000;

export type Policy = ClientPolicy & { windowSeconds: number; loadedAt: number };

export class PolicyCache {
  private policy: Policy | null = null;

  constructor(private readonly db: D1Database) {}

  /** The client's policy, at most POLICY_TTL_MS old; null for a client that does not exist. */
  async current(clientId: string): Promise<Policy | null> {
    if (this.policy && Date.now() - this.policy.loadedAt < POLICY_TTL_MS) return this.policy;
    const row = await findClientPolicy(openDatabase(this.db), clientId);
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
