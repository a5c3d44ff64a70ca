/** What `/oauth` answers, bare (not in the container). */
import * as z from "zod/mini";

/** The spec's "Token response", plus token_type (RFC 6749 §5.1). */
export const tokenResponseSchema = z.object({
  access_token: z.string(),
  token_type: z.literal("Bearer"),
  expires_in: z.number(),
  scope: z.string(),
  /** The user's id; `false` on a server token, as SPiD answers (its Java SDK reads the key always). */
  user_id: z.union([z.string(), z.literal(false)]),
  is_admin: z.boolean(),
  refresh_token: z.optional(z.string()),
  /** Token exchange (RFC 8693 §2.2.1) only. */
  issued_token_type: z.optional(z.string()),
  server_time: z.number(),
  /** OpenID Connect: when the grant has `openid`. */
  id_token: z.optional(z.string()),
});

export type TokenResponse = z.infer<typeof tokenResponseSchema>;

z.globalRegistry.add(tokenResponseSchema, { id: "TokenResponse" });

/** The public keys that verify the service's tokens (RFC 7517): Ed25519 and RSA, nothing private. */
export const keySetSchema = z.object({
  keys: z.array(
    z.union([
      z.object({ kty: z.literal("OKP"), crv: z.literal("Ed25519"), x: z.string(), ...publishedKeyFields() }),
      z.object({ kty: z.literal("RSA"), n: z.string(), e: z.string(), ...publishedKeyFields() }),
    ]),
  ),
});

function publishedKeyFields() {
  return { kid: z.string(), alg: z.enum(["EdDSA", "RS256"]), use: z.literal("sig") };
}

/**
 * Authorization server metadata (RFC 8414), which is also the OpenID Provider's (OpenID Connect
 * Discovery §3): what this deployment offers, and nothing more.
 */
export const serverMetadataSchema = z.object({
  issuer: z.string(),
  authorization_endpoint: z.string(),
  token_endpoint: z.string(),
  userinfo_endpoint: z.string(),
  registration_endpoint: z.string(),
  end_session_endpoint: z.string(),
  jwks_uri: z.string(),
  scopes_supported: z.array(z.string()),
  claims_supported: z.array(z.string()),
  subject_types_supported: z.array(z.string()),
  id_token_signing_alg_values_supported: z.array(z.string()),
  response_modes_supported: z.array(z.string()),
  prompt_values_supported: z.array(z.string()),
  display_values_supported: z.array(z.string()),
  acr_values_supported: z.array(z.string()),
  ui_locales_supported: z.array(z.string()),
  claim_types_supported: z.array(z.string()),
  claims_parameter_supported: z.boolean(),
  request_parameter_supported: z.boolean(),
  request_uri_parameter_supported: z.boolean(),
  backchannel_logout_supported: z.boolean(),
  backchannel_logout_session_supported: z.boolean(),
  grant_types_supported: z.array(z.string()),
  token_endpoint_auth_methods_supported: z.array(z.string()),
  response_types_supported: z.array(z.string()),
  code_challenge_methods_supported: z.array(z.string()),
  authorization_response_iss_parameter_supported: z.boolean(),
  revocation_endpoint: z.string(),
  revocation_endpoint_auth_methods_supported: z.array(z.string()),
  introspection_endpoint: z.string(),
  introspection_endpoint_auth_methods_supported: z.array(z.string()),
  service_documentation: z.string(),
});

z.globalRegistry.add(serverMetadataSchema, { id: "AuthorizationServerMetadata" });

/** Protected resource metadata (RFC 9728 §2). */
export const resourceMetadataSchema = z.object({
  resource: z.string(),
  authorization_servers: z.array(z.string()),
  scopes_supported: z.array(z.string()),
  bearer_methods_supported: z.array(z.string()),
  resource_name: z.string(),
  resource_documentation: z.string(),
});

z.globalRegistry.add(resourceMetadataSchema, { id: "ProtectedResourceMetadata" });

/** Token introspection (RFC 7662 §2.2): the claims of a live token, or only `active: false`. */
export const introspectionResponseSchema = z.union([
  z.object({ active: z.literal(false) }),
  z.object({
    active: z.literal(true),
    /** Access tokens only. */
    token_type: z.optional(z.literal("Bearer")),
    client_id: z.string(),
    scope: z.string(),
    sub: z.string(),
    aud: z.optional(z.string()),
    iss: z.string(),
    exp: z.number(),
    iat: z.number(),
    jti: z.optional(z.string()),
    /** What the token is: a user's access token, the client's own (server token), or a refresh token. */
    token_use: z.enum(["user", "server", "refresh"]),
  }),
]);

export type IntrospectionResponse = z.infer<typeof introspectionResponseSchema>;

z.globalRegistry.add(introspectionResponseSchema, { id: "IntrospectionResponse" });

/** The spec's OAuth exchange object. */
export const exchangeCodeSchema = z.object({ code: z.string() });

z.globalRegistry.add(exchangeCodeSchema, { id: "OAuthExchange" });

/** The spec's error body, bare under /oauth and the container's `error` under /api/2. */
export const errorBodySchema = z.object({
  error: z.string(),
  error_code: z.number(),
  type: z.enum(["OAuthException", "ApiException"]),
  error_description: z.string(),
});

/** The container's `error`: the spec's body, and SPiD's API exception fields beside it. */
export const containerErrorBodySchema = z.object({
  ...errorBodySchema.shape,
  code: z.number(),
  description: z.string(),
});
