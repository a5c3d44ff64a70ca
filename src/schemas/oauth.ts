// zod/mini: the Worker bundle carries only the checks it uses (about 14 KB against 450 KB for `{ z } from "zod"`).
import * as z from "zod/mini";

const param = z.string().check(z.maxLength(2048));
/** Longer than any token or assertion we accept. */
const token = z.string().check(z.maxLength(8192));

/** POST /oauth/token, form-encoded. Grant-specific parameters are checked by each grant. */
export const tokenRequestSchema = z.object({
  grant_type: z.string().check(z.minLength(1), z.maxLength(128)),
  client_id: z.optional(param),
  client_secret: z.optional(param),
  username: z.optional(param),
  password: z.optional(z.string().check(z.maxLength(1024))),
  redirect_uri: z.optional(param),
  refresh_token: z.optional(param),
  resource: z.optional(param),
  scope: z.optional(param),
  code: z.optional(param),
  /** PKCE (RFC 7636): checked against the code's challenge by the authorization_code grant. */
  code_verifier: z.optional(param),
  /** jwt-bearer (RFC 7523) and the draft's `assertion` grant. */
  assertion: z.optional(token),
  assertion_type: z.optional(param),
  /** Token exchange (RFC 8693). */
  subject_token: z.optional(token),
  subject_token_type: z.optional(param),
  requested_token_type: z.optional(param),
  actor_token: z.optional(token),
  audience: z.optional(param),
});

export type TokenRequest = z.infer<typeof tokenRequestSchema>;

/** POST /oauth/revoke (RFC 7009) and /oauth/introspect (RFC 7662), form-encoded. */
export const tokenQuerySchema = z.object({
  token: z.string().check(z.minLength(1), z.maxLength(8192)),
  token_type_hint: z.optional(param),
  client_id: z.optional(param),
  client_secret: z.optional(param),
});

/** POST /api/2/oauth/exchange, form-encoded; every rule is the handler's, with the spec's texts. */
export const exchangeRequestSchema = z.object({
  clientId: z.optional(param),
  type: z.optional(param),
  redirectUri: z.optional(param),
});
