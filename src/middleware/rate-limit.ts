import type { Context } from "hono";
import { admitCall } from "../durable-objects/leases";
import type { AccessTokenClaims, AppEnv } from "../env";
import { ApiError, OAuthError } from "../errors";
import { clientIp } from "../http/ip";
import { invalidTokenError } from "../oauth/tokens";
import type { ApiEndpoint } from "../schemas/api-endpoints";

/**
 * Admits a call of `endpoint` for the token's client (durable-objects/leases.ts): the token's
 * revocation first, then the IP allow-list, then the client's endpoint grants (no refusal spends
 * the client's quota), then the quota. Sets the figures the container reports and returns the
 * client's current merchant.
 */
export async function enforceClientLimits(
  c: Context<AppEnv>,
  token: AccessTokenClaims,
  endpoint: ApiEndpoint,
): Promise<number> {
  const { clientId, jti, grant } = token;
  const admission = await admitCall(c, clientId, clientIp(c.req.raw), endpoint, { jti, grant });
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
    case "revoked":
      throw invalidTokenError("The access token has been revoked", "revoked");
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
