import type { Context } from "hono";
import type { ClientRecord } from "../../db/queries/clients";
import type { AppEnv } from "../../env";
import type { TokenRequest } from "../../schemas/oauth";
import type { TokenResponse } from "../../schemas/responses/oauth";
import { issueAccessToken, type TokenKind } from "../tokens";

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
  token: { kind: TokenKind; userId: number | null; audience?: string | undefined },
  fields: { user_id?: string; is_admin: boolean; refresh_token?: string },
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
