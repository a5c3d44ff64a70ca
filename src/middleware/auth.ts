import { createMiddleware } from "hono/factory";
import type { AppEnv, TokenKind } from "../env";
import { OAuthError } from "../errors";
import { documented } from "../http/openapi";
import { SIGNED_PARAMETER } from "../http/signing";
import { verifyAccessToken } from "../oauth/tokens";
import type { ApiEndpoint } from "../schemas/api-endpoints";
import { enforceClientLimits } from "./rate-limit";
import { loadSigningKey } from "./signing";

/** Longer than any token we issue; anything bigger is rejected before parsing. */
const MAX_TOKEN_LENGTH = 4096;

/**
 * Route middleware for `endpoint`, which needs an access token (spec "Authentication"): verifies
 * the token (no database), lets the client's rate limiter admit the request (the client must be
 * granted the endpoint), then checks that the token is of the kind the endpoint requires.
 */
export function requireToken(endpoint: ApiEndpoint, accepted: TokenKind | "any") {
  const middleware = createMiddleware<AppEnv>(async (c, next) => {
    const claims = await verifyAccessToken(c.env, bearerToken(c.req.raw));
    const merchantId = await enforceClientLimits(c, claims, endpoint);
    if (accepted !== "any" && claims.kind !== accepted) {
      throw new OAuthError(403, "access_denied", `Access token rejected: this endpoint requires a ${accepted} token`);
    }
    c.set("caller", { ...claims, merchantId });
    await loadSigningKey(c, claims.clientId);
    await next();
  });
  return documented(middleware, {
    parameters: [
      {
        name: SIGNED_PARAMETER,
        in: "query",
        description:
          "1 for a signed response: `data` Base64 URL encoded, `algorithm` HMAC-SHA256, `sig` (the client's signing secret)",
        schema: { type: "string", enum: ["1", "true", "0", "false"] },
      },
    ],
    security: accepted === "any" ? [{ serverToken: [] }, { userToken: [] }] : [{ [`${accepted}Token`]: [] }],
    responses: {
      400: { description: "Malformed request or parameter (invalid_request)" },
      401: { description: "No valid access token (invalid_token)" },
      403: {
        description: `Not a ${accepted === "any" ? "server or user" : accepted} token; address not on the client's allow-list; endpoint \`${endpoint}\` not granted to the client`,
      },
      404: { description: "Unknown client ID" },
      420: { description: "Rate limit exceeded" },
    },
  });
}

/**
 * The token from `Authorization: Bearer` or `oauth_token`; exactly one of them (RFC 6750 §2). An
 * Authorization header counts as sent whatever it holds, so a malformed one is never passed over
 * for the query's token.
 */
function bearerToken(request: Request): string {
  const header = request.headers.get("Authorization");
  const fromQuery = new URL(request.url).searchParams.getAll("oauth_token");
  if (header !== null && fromQuery.length > 0) {
    throw new OAuthError(
      400,
      "invalid_request",
      "Send the access token either in the Authorization header or as oauth_token, not both",
    );
  }
  if (fromQuery.length > 1) throw new OAuthError(400, "invalid_request", "Parameter 'oauth_token' is repeated");
  let fromHeader: string | undefined;
  if (header !== null) {
    fromHeader = /^Bearer +(\S+) *$/i.exec(header)?.[1];
    if (fromHeader === undefined) {
      throw new OAuthError(400, "invalid_request", "Malformed Authorization header: use 'Bearer <access token>'");
    }
  }
  const token = fromHeader ?? fromQuery[0];
  if (!token || token.length > MAX_TOKEN_LENGTH) {
    throw new OAuthError(401, "invalid_token", "An access token is required", {
      "WWW-Authenticate": 'Bearer realm="api"',
    });
  }
  return token;
}
