import type { Context } from "hono";
import { rateLimiterFor } from "../durable-objects/rate-limiter";
import type { AppEnv } from "../env";
import { ApiError, OAuthError } from "../errors";
import { clientIp } from "../http/ip";
import type { ApiEndpoint } from "../schemas/api-endpoints";

/**
 * Asks the client's RateLimiter to admit a call of `endpoint`: IP allow-list first, then the
 * client's endpoint grants (neither refusal spends the client's quota), then the quota. Sets the
 * figures the container reports and returns the client's current merchant.
 */
export async function enforceClientLimits(
  c: Context<AppEnv>,
  clientId: string,
  endpoint: ApiEndpoint,
): Promise<number> {
  const started = performance.now();
  const admission = await rateLimiterFor(c.env, clientId).admit(clientId, clientIp(c.req.raw), endpoint);
  const timing = c.get("timing");
  if (timing) timing.durableObjectMs += performance.now() - started;
  switch (admission.outcome) {
    case "unknown_client":
      throw new OAuthError(404, "invalid_client_id", "Unknown client ID");
    case "ip_not_allowed":
      throw new OAuthError(403, "access_denied", "Requesting IP is not whitelisted");
    case "endpoint_not_granted":
      throw new OAuthError(
        403,
        "access_denied",
        "Client is not authorized to access this API endpoint (access must be requested)",
      );
    case "rate_limited":
      c.set("rateLimit", admission.figures);
      throw new ApiError(420, "access_denied", "Rate limit exceeded", {
        "Retry-After": String(admission.figures.reset),
      });
    case "admitted":
      c.set("rateLimit", admission.figures);
      return admission.merchantId;
  }
}
