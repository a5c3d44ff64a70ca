import type { Context } from "hono";
import type { ClientRecord } from "../../db/queries/clients";
import type { AppEnv } from "../../env";
import type { TokenRequest } from "../../schemas/oauth";

/** The spec's "Token response", plus token_type (RFC 6749 §5.1). */
export type TokenResponse = {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  scope: string;
  user_id?: string;
  is_admin: boolean;
  refresh_token?: string;
  server_time: number;
};

export type GrantRequest = {
  c: Context<AppEnv>;
  client: ClientRecord;
  params: TokenRequest;
  /** Unix seconds, fixed for the whole request. */
  now: number;
};

export type Grant = (request: GrantRequest) => Promise<TokenResponse>;
