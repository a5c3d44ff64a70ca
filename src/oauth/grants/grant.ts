import type { BatchItem } from "drizzle-orm/batch";
import type { Context } from "hono";
import type { ClientRecord } from "../../db/queries/clients";
import { insertRefreshToken } from "../../db/queries/refresh-tokens";
import { connectUser } from "../../db/queries/users";
import type { AppEnv, TokenKind } from "../../env";
import type { TokenRequest } from "../../schemas/oauth";
import type { TokenResponse } from "../../schemas/responses/oauth";
import { newRefreshToken, newRefreshTokenFamily } from "../refresh-tokens";
import { issueAccessToken } from "../tokens";

export type GrantRequest = {
  c: Context<AppEnv>;
  client: ClientRecord;
  params: TokenRequest;
  /** Unix seconds, fixed for the whole request. */
  now: number;
};

export type Grant = (request: GrantRequest) => Promise<TokenResponse>;

/** Issues the client's access token and wraps it in the Token response. */
export async function tokenResponse(
  { c, client, now }: GrantRequest,
  token: { kind: TokenKind; userId: number | null; audience?: string | undefined; grant?: string },
  fields: { user_id: string | false; is_admin: boolean; refresh_token?: string; issued_token_type?: string },
): Promise<TokenResponse> {
  const accessToken = await issueAccessToken(
    c.env,
    {
      kind: token.kind,
      clientId: client.id,
      merchantId: client.merchantId,
      userId: token.userId,
      scope: "",
      lifetime: client.accessTokenLifetime,
      audience: token.audience,
      grant: token.grant,
    },
    now,
  );
  return {
    access_token: accessToken,
    token_type: "Bearer",
    expires_in: client.accessTokenLifetime,
    scope: "",
    ...fields,
    server_time: now,
  };
}

/**
 * A user token and the refresh token of a new grant (refresh-token family) for the client: the
 * refresh token, the user's connection to the client and the grant's own `writes` go in one batch.
 */
export async function userTokensWithNewGrant(
  request: GrantRequest,
  userId: number,
  { grant = newRefreshTokenFamily(), writes = [], issuedTokenType }: UserTokenOptions = {},
): Promise<TokenResponse> {
  const { c, client, now } = request;
  const db = c.get("db")();
  const refresh = await newRefreshToken(c.env, now);
  await db.batch([
    insertRefreshToken(db, {
      tokenHash: refresh.tokenHash,
      clientId: client.id,
      userId,
      family: grant,
      created: refresh.created,
      expires: refresh.expires,
    }),
    connectUser(db, { clientId: client.id, userId, merchantId: client.merchantId }),
    ...writes,
  ]);
  return tokenResponse(
    request,
    { kind: "user", userId, grant },
    {
      user_id: String(userId),
      is_admin: false,
      refresh_token: refresh.token,
      ...(issuedTokenType && { issued_token_type: issuedTokenType }),
    },
  );
}

type UserTokenOptions = {
  /** The family id, when the caller had to know it before issuing (a redemption records it). */
  grant?: string;
  writes?: BatchItem<"sqlite">[];
  /** RFC 8693's `issued_token_type`, for token exchange. */
  issuedTokenType?: string;
};
