/**
 * One RateLimiter per client (idFromName(clientId)) guards every authenticated /api/2 request:
 * it checks that the token's merchant is still the client's and the client's IP allow-list, then
 * counts the request in the client's fixed window.
 * The client's policy (merchant, quota, window, allow-list) is read from D1 at most once a minute per
 * client, so the request path itself touches no database; policy changes apply within a minute.
 * The window survives eviction in the object's storage; an alarm deletes it once it has expired.
 */
import { DurableObject } from "cloudflare:workers";
import { openDatabase } from "../db/client";
import { findClientPolicy } from "../db/queries/clients";
import type { RateLimitSetting } from "../db/schema";
import type { Bindings } from "../env";
import { ipAllowed } from "../http/ip";

/** Quota for clients without a `rateLimit` of their own. */
export const DEFAULT_RATE_LIMIT: RateLimitSetting = { limit: 1000, windowSeconds: 3600 };
const POLICY_TTL_MS = 60_000;
const WINDOW_KEY = "window";

/** What the container's `request` object and the X-RateLimit-* headers report. */
export type RateLimitFigures = {
  limit: number;
  remaining: number;
  /** Seconds until the current window ends and the quota is whole again. */
  reset: number;
};

export type Admission =
  | { outcome: "admitted" | "rate_limited"; figures: RateLimitFigures }
  | { outcome: "ip_not_allowed" | "unknown_client" | "merchant_changed" };

type Policy = RateLimitSetting & { merchantId: number; ipAllowList: string[]; loadedAt: number };
type Window = { endsAt: number; count: number };

export class RateLimiter extends DurableObject<Bindings> {
  private policy: Policy | null = null;
  private window: Window | undefined;

  /** `merchantId` is the one the token was issued under. */
  async admit(clientId: string, merchantId: number, ip: string | null): Promise<Admission> {
    const policy = await this.currentPolicy(clientId);
    if (!policy) return { outcome: "unknown_client" };
    if (policy.merchantId !== merchantId) return { outcome: "merchant_changed" };
    if (!ipAllowed(policy.ipAllowList, ip)) {
      return { outcome: "ip_not_allowed" };
    }
    const now = Date.now();
    let window = (this.window ??= this.ctx.storage.kv.get<Window>(WINDOW_KEY));
    if (!window || now >= window.endsAt) {
      window = this.window = { endsAt: now + policy.windowSeconds * 1000, count: 0 };
      await this.ctx.storage.setAlarm(window.endsAt);
    }
    const reset = Math.ceil((window.endsAt - now) / 1000);
    if (window.count >= policy.limit) {
      return { outcome: "rate_limited", figures: { limit: policy.limit, remaining: 0, reset } };
    }
    window.count += 1;
    this.ctx.storage.kv.put(WINDOW_KEY, window);
    return { outcome: "admitted", figures: { limit: policy.limit, remaining: policy.limit - window.count, reset } };
  }

  override async alarm(): Promise<void> {
    const window = this.ctx.storage.kv.get<Window>(WINDOW_KEY);
    if (window && Date.now() >= window.endsAt) {
      this.ctx.storage.kv.delete(WINDOW_KEY);
      this.window = undefined;
    }
  }

  private async currentPolicy(clientId: string): Promise<Policy | null> {
    if (this.policy && Date.now() - this.policy.loadedAt < POLICY_TTL_MS) return this.policy;
    const row = await findClientPolicy(openDatabase(this.env.DB), clientId);
    this.policy = row
      ? {
          ...(row.rateLimit ?? DEFAULT_RATE_LIMIT),
          merchantId: row.merchantId,
          ipAllowList: row.ipAllowList,
          loadedAt: Date.now(),
        }
      : null;
    return this.policy;
  }
}
