import type { BatchItem } from "drizzle-orm/batch";
import type { Context } from "hono";
import type { ClientRecord } from "../../db/queries/clients";
import { insertRefreshToken } from "../../db/queries/refresh-tokens";
import { connectUser, findUserProfiles } from "../../db/queries/users";
import type { AppEnv, TokenKind } from "../../env";
import type { TokenRequest } from "../../schemas/oauth";
import type { TokenResponse } from "../../schemas/responses/oauth";
import type { RequestedClaims } from "../../schemas/requested-claims";
import { releasedClaims, userClaims } from "../openid/claims";
import type { Scope } from "../openid/scopes";
import { issueIdToken, type OpenIdSignIn } from "../openid/id-tokens";
import { newRefreshTokenFamily } from "../refresh-tokens";
import { newSelfContainedGrant } from "../self-contained-refresh-tokens";
import { issueAccessToken } from "../tokens";

export type GrantRequest = {
  c: Context<AppEnv>;
  client: ClientRecord;
  params: TokenRequest;
  /** The `scope` parameter's values, all supported; undefined when it was not sent. */
  scopes: Scope[] | undefined;
  /** Unix seconds, fixed for the whole request. */
  now: number;
};

export type Grant = (request: GrantRequest) => Promise<TokenResponse>;

/**
 * What a user's grant carries to every token issued under it: its scope and, when that has
 * `openid`, the sign-in its ID tokens describe.
 */
export type UserGrant = {
  /** Space-separated, as the token response and the access token's `scope` claim say it. */
  scope: string;
  /** The user's OpenID Connect subject; needed only with `openid`. */
  subject?: string;
  signIn?: OpenIdSignIn | undefined;
  nonce?: string | undefined;
  claims?: RequestedClaims | undefined;
};

/** Issues the client's access token and wraps it in the Token response. */
export async function tokenResponse(
  { c, client, now }: GrantRequest,
  token: {
    kind: TokenKind;
    userId: number | null;
    audience?: string | undefined;
    grant?: string;
    scope?: string;
    userinfoClaims?: string[] | undefined;
  },
  fields: { user_id: string | false; is_admin: boolean; refresh_token?: string; issued_token_type?: string },
): Promise<TokenResponse> {
  const scope = token.scope ?? "";
  const accessToken = await issueAccessToken(
    c.env,
    {
      kind: token.kind,
      clientId: client.id,
      merchantId: client.merchantId,
      userId: token.userId,
      scope,
      lifetime: client.accessTokenLifetime,
      audience: token.audience,
      grant: token.grant,
      userinfoClaims: token.userinfoClaims,
      algorithm: client.accessTokenSignedResponseAlg ?? undefined,
    },
    now,
  );
  return {
    access_token: accessToken,
    token_type: "Bearer",
    expires_in: client.accessTokenLifetime,
    scope,
    ...fields,
    server_time: now,
  };
}

/**
 * The user's tokens under a grant: the access token, and an ID token beside it when the grant has
 * `openid` and a sign-in (Core §3.1.3.3, §12.2).
 */
export async function userTokens(
  request: GrantRequest,
  userId: number,
  userGrant: UserGrant,
  token: { grant: string; refreshToken: string; issuedTokenType?: string | undefined },
): Promise<TokenResponse> {
  const { c, client, now } = request;
  const response = await tokenResponse(
    request,
    {
      kind: "user",
      userId,
      grant: token.grant,
      scope: userGrant.scope,
      userinfoClaims: userGrant.claims?.userinfo.length ? userGrant.claims.userinfo : undefined,
    },
    {
      user_id: String(userId),
      is_admin: false,
      refresh_token: token.refreshToken,
      ...(token.issuedTokenType && { issued_token_type: token.issuedTokenType }),
    },
  );
  const { signIn, subject } = userGrant;
  if (!userGrant.scope.split(" ").includes("openid") || !signIn || subject === undefined) return response;
  const asked = userGrant.claims?.idToken ?? [];
  const [profile] = asked.length > 0 ? await findUserProfiles(c.get("db")(), [userId]) : [];
  const idToken = await issueIdToken(
    c.env,
    {
      client,
      subject,
      signIn,
      accessToken: response.access_token,
      nonce: userGrant.nonce,
      ...(profile && { userClaims: userClaims(profile, releasedClaims([], asked)) }),
    },
    now,
  );
  return { ...response, id_token: idToken };
}

/**
 * A user token and the refresh token of a new grant (refresh-token family) for the client: the
 * refresh token, the user's connection to the client and the grant's own `writes` go in one batch.
 */
export async function userTokensWithNewGrant(
  request: GrantRequest,
  userId: number,
  { grant = newRefreshTokenFamily(), writes = [], issuedTokenType, userGrant = { scope: "" } }: UserTokenOptions = {},
): Promise<TokenResponse> {
  const { c, client, now } = request;
  const db = c.get("db")();
  const refresh = await firstRefreshToken(request, userId, grant, userGrant);
  // Signed before anything is written: a signing key that fails (a 503 while misconfigured) must
  // leave no grant behind whose tokens the client never got.
  const response = await userTokens(request, userId, userGrant, {
    grant,
    refreshToken: refresh.token,
    issuedTokenType,
  });
  const { signIn } = userGrant;
  await db.batch([
    insertRefreshToken(db, {
      tokenHash: refresh.tokenHash,
      secretHash: refresh.secretHash,
      clientId: client.id,
      userId,
      family: grant,
      created: now,
      expires: refresh.expires,
      scope: userGrant.scope,
      ...(signIn && { authTime: signIn.authTime, sid: signIn.sid, method: signIn.method }),
      ...(userGrant.claims && { claims: userGrant.claims }),
    }),
    connectUser(db, { clientId: client.id, userId, merchantId: client.merchantId }),
    ...writes,
  ]);
  return response;
}

/**
 * A new grant's first refresh token, with its row's key, hash and end. It carries its grant
 * (oauth/self-contained-refresh-tokens.ts): rotated at each use, or, for a confidential client that
 * chose so, persistent.
 */
async function firstRefreshToken(
  { c, client, now }: GrantRequest,
  userId: number,
  grant: string,
  userGrant: UserGrant,
) {
  const rotated = client.refreshTokenRotation || client.publicClient;
  const { scope, subject, signIn, claims } = userGrant;
  const first = await newSelfContainedGrant(
    c.env,
    client.id,
    {
      family: grant,
      userId,
      scope,
      subject: scope.split(" ").includes("openid") ? subject : undefined,
      signIn,
      claims,
      ...(rotated && { generation: 0 }),
    },
    now,
  );
  return { ...first, secretHash: null };
}

type UserTokenOptions = {
  /** The family id, when the caller had to know it before issuing (a redemption records it). */
  grant?: string;
  writes?: BatchItem<"sqlite">[];
  /** RFC 8693's `issued_token_type`, for token exchange. */
  issuedTokenType?: string;
  userGrant?: UserGrant;
};
