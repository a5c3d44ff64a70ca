import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { AppEnv, TokenKind } from "../env";
import { OAuthError } from "../errors";
import { isForm } from "../http/media-type";
import { documented } from "../http/openapi";
import { singleQueryValue } from "../http/query-parameter";
import { CONTEXT_CLIENT_PARAMETER } from "../http/reserved-parameters";
import { SIGNED_PARAMETER } from "../http/signing";
import { MAX_TOKEN_LENGTH, verifyAccessToken } from "../oauth/tokens";
import type { ApiEndpoint } from "../schemas/api-endpoints";
import { enforceClientLimits } from "./rate-limit";
import { loadSigningKey } from "./signing";

/**
 * Route middleware for `endpoint`, which needs an access token (spec "Authentication"): verifies
 * the token (no database), lets the client's rate limiter admit the request (the client must be
 * granted the endpoint), then checks that the token is of the kind the endpoint requires.
 */
export function requireToken(endpoint: ApiEndpoint, accepted: TokenKind | "any") {
  const middleware = createMiddleware<AppEnv>(async (c, next) => {
    const claims = await verifyAccessToken(c.env, await bearerToken(c));
    checkContextClient(c, claims.clientId);
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
 * The token from `Authorization: Bearer`, the `oauth_token` query parameter, or `oauth_token` (SPiD's
 * Java clients send it so on POST and DELETE) or `access_token` (RFC 6750 §2.2) in a form body:
 * exactly one of them (§2). An Authorization header counts as sent whatever it holds, so a malformed one is never
 * passed over for another way's token.
 */
async function bearerToken(c: Context<AppEnv>): Promise<string> {
  const header = c.req.header("Authorization");
  const fromQuery = c.req.url.includes("?") ? (c.req.queries("oauth_token") ?? []) : [];
  const fromBody = await formTokens(c);
  const ways = [header !== undefined, fromQuery.length > 0, fromBody.length > 0].filter(Boolean).length;
  if (ways > 1) {
    throw new OAuthError(
      400,
      "invalid_request",
      "Send the access token one way only: the Authorization header, the oauth_token query parameter or oauth_token (or access_token) in the form body",
    );
  }
  if (fromQuery.length > 1) throw new OAuthError(400, "invalid_request", "Parameter 'oauth_token' is repeated");
  if (fromBody.length > 1) {
    throw new OAuthError(400, "invalid_request", "The form body carries more than one access token");
  }
  let fromHeader: string | undefined;
  if (header !== undefined) {
    fromHeader = /^Bearer +(\S+) *$/i.exec(header)?.[1];
    if (fromHeader === undefined) {
      throw new OAuthError(400, "invalid_request", "Malformed Authorization header: use 'Bearer <access token>'");
    }
  }
  const token = fromHeader ?? fromQuery[0] ?? fromBody[0];
  if (!token || token.length > MAX_TOKEN_LENGTH) {
    throw new OAuthError(401, "invalid_token", "An access token is required", {
      "WWW-Authenticate": 'Bearer realm="api"',
    });
  }
  return token;
}

/** `oauth_token` and `access_token` values of a form body (read and cached before anything ran: middleware/request.ts). */
async function formTokens(c: Context<AppEnv>): Promise<string[]> {
  const { method } = c.req;
  if (method === "GET" || method === "HEAD" || !isForm(c.req.header("Content-Type"))) return [];
  const form = await c.req.formData();
  return [...form.getAll("oauth_token"), ...form.getAll("access_token")].map(String);
}

/**
 * SPiD's data sharing (`contextClientId`: act for another client of the merchant) is not offered:
 * the caller's own id is accepted, as clients configured with it send it on every call; any other
 * is refused before the call is counted.
 */
function checkContextClient(c: Context<AppEnv>, clientId: string): void {
  if (!c.req.url.includes("?")) return;
  const named = singleQueryValue(c, CONTEXT_CLIENT_PARAMETER);
  if (named !== undefined && named !== clientId) {
    throw new OAuthError(
      403,
      "access_denied",
      `Client is not authorized to act for another client: ${CONTEXT_CLIENT_PARAMETER} must be the calling client's own id`,
    );
  }
}
