/**
 * Revocation (RFC 7009) and introspection (RFC 7662) of a client's own tokens.
 *
 * Access tokens are JWTs checked without a database, so a revoked one is listed in its client's
 * RateLimiter (by `jti`, or by the grant it was issued under), which every API call of that client
 * already asks before it is admitted: revocation takes effect on the next call, and the list
 * holds each entry only until the token would have expired anyway. Refresh tokens live in D1;
 * revoking one revokes its whole grant, the refresh-token family and every access token issued
 * under it (RFC 7009 §2.1).
 */
import type { Context } from "hono";
import { findRefreshToken, revokeRefreshTokenFamily } from "../db/queries/refresh-tokens";
import { findUserRefusal } from "../db/queries/users";
import { revokeTokens } from "../durable-objects/leases";
import { rateLimiterFor } from "../durable-objects/rate-limiter";
import type { AccessTokenClaims, AppEnv } from "../env";
import { OAuthError } from "../errors";
import type { IntrospectionResponse } from "../schemas/responses/oauth";
import { refreshTokenHash } from "./refresh-tokens";
import { MAX_ACCESS_TOKEN_LIFETIME } from "./lifetimes";
import { verifyAccessToken } from "./tokens";

/**
 * Ends a grant: its refresh tokens at once (D1), and its access tokens at the client's next call
 * (listed in the client's RateLimiter for as long as any of them can live).
 */
export async function revokeGrant(c: Context<AppEnv>, clientId: string, grant: string, now: number): Promise<void> {
  // The Durable Object first: the grant's access tokens stop at their next call even if the D1
  // update then fails.
  await revokeTokens(c, clientId, [{ grant, expiresAt: (now + MAX_ACCESS_TOKEN_LIFETIME) * 1000 }]);
  await revokeRefreshTokenFamily(c.get("db")(), grant, now);
}

/** POST /oauth/revoke: revokes `token` if it is one of `clientId`'s; anything else is left alone. */
export async function revokeToken(c: Context<AppEnv>, clientId: string, token: string, now: number): Promise<void> {
  if (looksLikeJwt(token)) {
    const claims = await ownAccessToken(c, clientId, token);
    if (claims) await revokeTokens(c, clientId, [{ jti: claims.jti, expiresAt: claims.expires * 1000 }]);
    return;
  }
  const refresh = await findRefreshToken(c.get("db")(), await refreshTokenHash(c.env, token));
  if (refresh && refresh.clientId === clientId) await revokeGrant(c, clientId, refresh.family, now);
}

/**
 * POST /oauth/introspect: the claims of `clientId`'s own live token, else `{active: false}`.
 * Live means valid, unexpired, not revoked, and, for a user's token, a user who may still sign in.
 */
export async function introspectToken(
  c: Context<AppEnv>,
  clientId: string,
  token: string,
  now: number,
): Promise<IntrospectionResponse> {
  const inactive = { active: false } as const;
  if (looksLikeJwt(token)) {
    const claims = await ownAccessToken(c, clientId, token);
    if (!claims) return inactive;
    const { jti, grant } = claims;
    if (await rateLimiterFor(c.env, clientId, c.get("timing")).revoked({ jti, grant })) return inactive;
    if (claims.userId !== null && !(await userMaySignIn(c, claims.userId))) return inactive;
    return {
      active: true,
      token_type: "Bearer",
      client_id: clientId,
      scope: claims.scope,
      sub: claims.userId === null ? clientId : String(claims.userId),
      aud: claims.audience,
      iss: c.env.BASE_URL,
      exp: claims.expires,
      iat: claims.issuedAt,
      jti,
      token_use: claims.kind,
    };
  }
  const refresh = await findRefreshToken(c.get("db")(), await refreshTokenHash(c.env, token));
  if (!refresh || refresh.clientId !== clientId || refresh.revoked !== null || refresh.expires <= now) return inactive;
  if (!(await userMaySignIn(c, refresh.userId))) return inactive;
  // No token_type: RFC 7662 means the access token's type (RFC 6749 §5.1); token_use tells the kind.
  return {
    active: true,
    client_id: clientId,
    scope: refresh.scope,
    sub: String(refresh.userId),
    iss: c.env.BASE_URL,
    exp: refresh.expires,
    iat: refresh.created,
    token_use: "refresh",
  };
}

/** Refresh tokens are base64url without dots; our access tokens are compact JWS. */
function looksLikeJwt(token: string): boolean {
  return token.split(".").length === 3;
}

/** The token's claims when it is a valid, unexpired access token of ours issued to `clientId`. */
async function ownAccessToken(
  c: Context<AppEnv>,
  clientId: string,
  token: string,
): Promise<AccessTokenClaims | undefined> {
  try {
    const claims = await verifyAccessToken(c.env, token, "any");
    return claims.clientId === clientId ? claims : undefined;
  } catch (err) {
    if (err instanceof OAuthError) return undefined;
    throw err;
  }
}

async function userMaySignIn(c: Context<AppEnv>, userId: number): Promise<boolean> {
  return (await findUserRefusal(c.get("db")(), userId)) === undefined;
}
