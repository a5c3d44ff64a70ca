/** A client registration as RFC 7591 §3.2.1 and RFC 7592 answer it. */
import * as z from "zod/mini";

export const registrationSchema = z.object({
  client_id: z.string(),
  client_id_issued_at: z.number(),
  /** Only in the answer to the registration itself; never stored, only its keyed hash. */
  client_secret: z.optional(z.string()),
  client_secret_expires_at: z.optional(z.literal(0)),
  registration_access_token: z.optional(z.string()),
  registration_client_uri: z.string(),
  client_name: z.string(),
  redirect_uris: z.array(z.string()),
  grant_types: z.array(z.string()),
  response_types: z.array(z.string()),
  token_endpoint_auth_method: z.enum(["client_secret_basic", "client_secret_post", "none"]),
  post_logout_redirect_uris: z.array(z.string()),
  backchannel_logout_session_required: z.boolean(),
  id_token_signed_response_alg: z.enum(["RS256", "EdDSA"]),
  logo_uri: z.optional(z.string()),
  client_uri: z.optional(z.string()),
  backchannel_logout_uri: z.optional(z.string()),
  scope: z.optional(z.string()),
});

z.globalRegistry.add(registrationSchema, { id: "ClientRegistration" });
