/**
 * Revocation (RFC 7009) and introspection (RFC 7662) of a client's own tokens.
 *
 * Access tokens are JWTs checked without a database, so a revoked one is listed in its client's
 * RateLimiter (by `jti`, or by the grant it was issued under), which every API call of that client
 * already asks before it is admitted: revocation takes effect on the next call, and the list
 * holds each entry only until the token would have expired anyway. Revoking a refresh token
 * revokes its whole grant, the refresh-token family and every access token issued under it (RFC
 * 7009 §2.1): at the client's RateLimiter, which a self-contained token's refresh asks, and in D1.
 */
import type { Context } from "hono";
import { findRefreshToken, findSelfContainedGrant, revokeRefreshTokenFamily } from "../db/queries/refresh-tokens";
import { findUserRefusal } from "../db/queries/users";
import { revokeTokens } from "../durable-objects/leases";
import { rateLimiterFor } from "../durable-objects/rate-limiter";
import type { AccessTokenClaims, AppEnv } from "../env";
import { auditEntry, byClient, type SignInClient } from "../events/audit";
import { OAuthError } from "../errors";
import type { IntrospectionResponse } from "../schemas/responses/oauth";
import { MAX_ACCESS_TOKEN_LIFETIME } from "./lifetimes";
import { presentedRefreshToken } from "./refresh-tokens";
import {
  openedGrant,
  openSelfContainedToken,
  type SelfContainedTokenParts,
  selfContainedTokenParts,
} from "./self-contained-refresh-tokens";
import { verifyAccessToken } from "./tokens";

/**
 * Why a grant ends, as the audit trail says it: the client revoked it (RFC 7009), or a code or a
 * refresh token was presented again (RFC 6749 §4.1.2, RFC 9700 §4.14.2).
 */
export type GrantEnd = "revoked" | "code_reuse" | "refresh_reuse";

/**
 * Ends a grant: its refresh tokens at once (D1, with its audit entry; a self-contained grant's at
 * its client's RateLimiter, which its refreshes ask), and its access tokens at the client's next
 * call (listed in the client's RateLimiter for as long as any of them can live). `persistent` (the
 * RPC's name) when the grant's refresh tokens are, or may be, self-contained ones.
 */
export async function revokeGrant(
  c: Context<AppEnv>,
  client: SignInClient,
  { grant, userId, reason, persistent }: { grant: string; userId?: number; reason: GrantEnd; persistent?: boolean },
  now: number,
): Promise<void> {
  // The Durable Object first: the grant's access tokens stop at their next call even if the D1
  // update then fails.
  await revokeTokens(
    c.env,
    client.id,
    [{ grant, expiresAt: (now + MAX_ACCESS_TOKEN_LIFETIME) * 1000, ...(persistent && { persistent }) }],
    c.get("timing"),
  );
  const db = c.get("db")();
  await db.batch([
    revokeRefreshTokenFamily(db, grant, now),
    auditEntry(
      c,
      byClient(client),
      { action: "token.revoke", ...(userId !== undefined && { userId }), detail: { token: "grant", reason } },
      now,
    ),
  ]);
}

/** POST /oauth/revoke: revokes `token` if it is one of `client`'s; anything else is left alone. */
export async function revokeToken(c: Context<AppEnv>, client: SignInClient, token: string, now: number): Promise<void> {
  if (looksLikeJwt(token)) {
    const claims = await ownAccessToken(c, client.id, token);
    if (!claims) return;
    await revokeTokens(c.env, client.id, [{ jti: claims.jti, expiresAt: claims.expires * 1000 }], c.get("timing"));
    const detail = { token: "access", reason: "revoked" };
    const entry = { action: "token.revoke", ...(claims.userId !== null && { userId: claims.userId }), detail };
    await auditEntry(c, byClient(client), entry, now).run();
    return;
  }
  const selfContained = selfContainedTokenParts(token);
  if (selfContained) {
    const grant = await openSelfContainedToken(c.env, client.id, selfContained);
    if (!grant) return;
    // Its grant's row, read first: one revoked already (a client's retry whose answer was lost)
    // is left as it is, with no second audit entry.
    const row = await findSelfContainedGrant(c.get("db")(), grant.locator);
    if (row && row.revoked !== null) return;
    const ended = { grant: grant.family, userId: grant.userId, reason: "revoked", persistent: true } as const;
    await revokeGrant(c, client, ended, now);
    return;
  }
  // Any token that names the grant (its current one, or an earlier one: only its holders saw its
  // locator) revokes the grant.
  const refresh = await findRefreshToken(c.get("db")(), await presentedRefreshToken(c.env, token));
  if (refresh && refresh.clientId === client.id) {
    await revokeGrant(c, client, { grant: refresh.family, userId: refresh.userId, reason: "revoked" }, now);
  }
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
  const selfContained = selfContainedTokenParts(token);
  if (selfContained) return introspectSelfContained(c, clientId, selfContained, now);
  const refresh = await findRefreshToken(c.get("db")(), await presentedRefreshToken(c.env, token));
  const live = refresh?.current && refresh.revoked === null && refresh.expires > now;
  if (!refresh || !live || refresh.clientId !== clientId) return inactive;
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

/**
 * A refresh token of the client's own that carries its grant: live (unexpired, its grant not
 * ended, a rotated one its grant's current generation), and its user may still sign in.
 */
async function introspectSelfContained(
  c: Context<AppEnv>,
  clientId: string,
  parts: SelfContainedTokenParts,
  now: number,
): Promise<IntrospectionResponse> {
  // Introspection authenticates a confidential client alone (RFC 7662 §2.1).
  const grant = await openedGrant(c.env, { id: clientId, publicClient: false }, parts, now);
  if (typeof grant === "string") return { active: false };
  const limiter = rateLimiterFor(c.env, clientId, c.get("timing"));
  const live =
    grant.generation === undefined
      ? !(await limiter.grantEnded(grant.family))
      : (await limiter.grantGeneration(grant.family)) === grant.generation;
  if (!live || !(await userMaySignIn(c, grant.userId))) return { active: false };
  return {
    active: true,
    client_id: clientId,
    scope: grant.scope,
    sub: String(grant.userId),
    iss: c.env.BASE_URL,
    exp: grant.expires,
    iat: grant.issued,
    token_use: "refresh",
  };
}

/**
 * Grant-row refresh tokens have one dot at most, those that carry their grant three or four; our
 * access tokens are compact JWS (two).
 */
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
