import type { Context } from "hono";
import { rateLimiterFor } from "../durable-objects/rate-limiter";
import type { AppEnv } from "../env";
import { ApiError, OAuthError } from "../errors";
import { clientIp } from "../http/ip";
import { type AccessTokenClaims, invalidTokenError } from "../oauth/tokens";

/**
 * Asks the client's RateLimiter to admit the request: the token's merchant and the IP allow-list
 * first (a refused request does not spend the client's quota), then the quota. Sets the figures
 * the container reports.
 */
export async function enforceClientLimits(c: Context<AppEnv>, caller: AccessTokenClaims): Promise<void> {
  const admission = await rateLimiterFor(c.env, caller.clientId).admit(
    caller.clientId,
    caller.merchantId,
    clientIp(c.req.raw),
  );
  switch (admission.outcome) {
    case "unknown_client":
      throw new OAuthError(404, "invalid_client_id", "Unknown client ID");
    case "merchant_changed":
      throw invalidTokenError("The access token was issued before its client moved to another merchant", "revoked");
    case "ip_not_allowed":
      throw new OAuthError(403, "access_denied", "Requesting IP is not whitelisted");
    case "rate_limited":
      c.set("rateLimit", admission.figures);
      throw new ApiError(420, "access_denied", "Rate limit exceeded", {
        "Retry-After": String(admission.figures.reset),
      });
    case "admitted":
      c.set("rateLimit", admission.figures);
  }
}
