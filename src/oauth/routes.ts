/** /oauth/*: the token endpoint, revocation and introspection, and the public keys that verify tokens. */
import { Hono } from "hono";
import * as z from "zod/mini";
import type { AppEnv } from "../env";
import { OAuthError } from "../errors";
import { describeRoute, type RouteDescription } from "../http/container";
import { nowInSeconds } from "../http/datetime";
import { documented } from "../http/openapi";
import { validate } from "../http/validation";
import { tokenQuerySchema, tokenRequestSchema } from "../schemas/oauth";
import {
  introspectionResponseSchema,
  keySetSchema,
  resourceMetadataSchema,
  serverMetadataSchema,
  tokenResponseSchema,
} from "../schemas/responses/oauth";
import { authenticateClient } from "./client-auth";
import { authorizationCodeGrant } from "./grants/authorization-code";
import { clientCredentialsGrant } from "./grants/client-credentials";
import type { Grant } from "./grants/grant";
import { assertionGrant, jwtBearerGrant } from "./grants/jwt-bearer";
import { passwordGrant } from "./grants/password";
import { refreshTokenGrant } from "./grants/refresh-token";
import { tokenExchangeGrant } from "./grants/token-exchange";
import { htmlLang, LOCALES } from "../pages/locale";
import { DISPLAYS, PROMPTS } from "./authorization-request";
import { allowedScopes, ID_TOKEN_CLAIMS, parseScope, USER_CLAIMS } from "./openid/claims";
import { SUPPORTED_SCOPES } from "./openid/scopes";
import { ACR_VALUES_SUPPORTED } from "./authentication-context";
import { introspectToken, revokeToken } from "./revocation";
import { apiResource, namesThisApi, publicKeySet } from "./tokens";

/** In the order of the spec's status samples, then token exchange. */
const GRANTS = new Map<string, Grant>([
  ["authorization_code", authorizationCodeGrant],
  ["password", passwordGrant],
  ["assertion", assertionGrant],
  ["refresh_token", refreshTokenGrant],
  ["client_credentials", clientCredentialsGrant],
  ["urn:ietf:params:oauth:grant-type:jwt-bearer", jwtBearerGrant],
  ["urn:ietf:params:oauth:grant-type:token-exchange", tokenExchangeGrant],
]);

const CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"];
/**
 * The grants that take `scope`: an authorization code's is its request's, so one sent with the
 * code is not read; the others issue tokens without one.
 */
const SCOPED_GRANTS = new Set(["authorization_code", "password", "refresh_token", "client_credentials"]);
/** The grants whose tokens are for this API alone: a `resource` must name it, if given. */
const API_ONLY_GRANTS = new Set(["authorization_code", "refresh_token", "password"]);
/** What a public client (client_id, no secret) may ask for: a code with PKCE, and its refresh. */
export const PUBLIC_CLIENT_GRANTS = new Set(["authorization_code", "refresh_token"]);
/** What the OAuth endpoints answer: never cached (RFC 6749 §5.1, RFC 7662 §2.2). */
export const NO_STORE = { "Cache-Control": "no-store", Pragma: "no-cache" };

/** What /api/2/status reports: the grants this deployment actually accepts. */
export const SUPPORTED_GRANT_TYPES = [...GRANTS.keys()];

/**
 * The server's metadata, one document for RFC 8414 (/.well-known/oauth-authorization-server) and
 * OpenID Connect Discovery (/.well-known/openid-configuration), so the two always agree. `issuer`
 * is exactly the base URL, as the tokens' `iss`; the grants are those `/oauth/token` accepts, as
 * the status endpoint lists them. Public clients authenticate with client_id alone (`none`), for
 * the authorization_code and refresh_token grants only and to revoke their own tokens;
 * introspection takes confidential clients only.
 */
function serverMetadata(base: string): z.infer<typeof serverMetadataSchema> {
  return {
    issuer: base,
    authorization_endpoint: `${base}/oauth/authorize`,
    token_endpoint: `${base}/oauth/token`,
    userinfo_endpoint: `${base}/oauth/userinfo`,
    registration_endpoint: `${base}/oauth/register`,
    end_session_endpoint: `${base}/oauth/logout`,
    jwks_uri: `${base}/.well-known/jwks.json`,
    scopes_supported: [...SUPPORTED_SCOPES],
    claims_supported: [...USER_CLAIMS, ...ID_TOKEN_CLAIMS],
    subject_types_supported: ["public"],
    id_token_signing_alg_values_supported: ["RS256", "EdDSA"],
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    grant_types_supported: SUPPORTED_GRANT_TYPES,
    token_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS, "none"],
    code_challenge_methods_supported: ["S256"],
    prompt_values_supported: [...PROMPTS],
    display_values_supported: [...DISPLAYS],
    acr_values_supported: ACR_VALUES_SUPPORTED,
    ui_locales_supported: LOCALES.map(htmlLang),
    claim_types_supported: ["normal"],
    claims_parameter_supported: true,
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
    backchannel_logout_supported: true,
    backchannel_logout_session_supported: true,
    authorization_response_iss_parameter_supported: true,
    revocation_endpoint: `${base}/oauth/revoke`,
    revocation_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS, "none"],
    introspection_endpoint: `${base}/oauth/introspect`,
    introspection_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    service_documentation: `${base}/api/2/reference`,
  };
}

/** Where the protected resource metadata of this API is: the well-known path inserted before its path. */
export const protectedResourceMetadataUrl = (base: string) => `${base}/.well-known/oauth-protected-resource/api/2`;

/**
 * Protected resource metadata (RFC 9728) of the resource `resource`: this API (at its own path)
 * or the service as a whole (the origin, at the bare well-known path), both served by this
 * authorization server, with the same tokens.
 */
function resourceMetadata(base: string, resource: string): z.infer<typeof resourceMetadataSchema> {
  return {
    resource,
    authorization_servers: [base],
    scopes_supported: [...SUPPORTED_SCOPES],
    bearer_methods_supported: ["header", "body", "query"],
    resource_name: "Account and Commerce API",
    resource_documentation: `${base}/api/2/reference`,
  };
}

const describeResourceMetadata = (controller: string) =>
  describeRoute({
    name: "Get the protected resource metadata",
    controller,
    description:
      "RFC 9728: the API (at /.well-known/oauth-protected-resource/api/2, the path-inserted form) and the service's origin (at /.well-known/oauth-protected-resource), each naming this server as its authorization server. A 401 from /api/2 points here in its WWW-Authenticate `resource_metadata`.",
    success: { data: resourceMetadataSchema, bare: true },
  });

const describeMetadata = (controller: string) =>
  describeRoute({
    name: "Get the authorization server metadata",
    controller,
    description:
      "RFC 8414 and OpenID Connect Discovery: the same document at /.well-known/oauth-authorization-server and /.well-known/openid-configuration.",
    success: { data: serverMetadataSchema, bare: true },
  });

export const metadataRoutes = new Hono<AppEnv>()
  .get("/oauth-authorization-server", describeMetadata("oauth/metadata#show"), (c) =>
    c.json(serverMetadata(c.env.BASE_URL), 200, { "Cache-Control": "public, max-age=300" }),
  )
  .get("/openid-configuration", describeMetadata("oauth/openid-configuration#show"), (c) =>
    c.json(serverMetadata(c.env.BASE_URL), 200, { "Cache-Control": "public, max-age=300" }),
  )
  .get("/oauth-protected-resource", describeResourceMetadata("oauth/protected-resource#origin"), (c) =>
    c.json(resourceMetadata(c.env.BASE_URL, c.env.BASE_URL), 200, { "Cache-Control": "public, max-age=300" }),
  )
  .get("/oauth-protected-resource/api/2", describeResourceMetadata("oauth/protected-resource#show"), (c) =>
    c.json(resourceMetadata(c.env.BASE_URL, apiResource(c.env.BASE_URL)), 200, {
      "Cache-Control": "public, max-age=300",
    }),
  );

/** The public keys, here and at /.well-known/jwks.json. */
export const describeKeySet = () =>
  describeRoute({
    name: "Get the token signing keys",
    controller: "oauth/jwks#show",
    success: { data: keySetSchema, bare: true },
  });

/** An endpoint the client authenticates at with its id and secret (Basic, or in the body). */
const clientAuthenticated = (route: RouteDescription) =>
  documented(describeRoute(route), { security: [{ clientCredentials: [] }, {}] });

export const oauthRoutes = new Hono<AppEnv>()
  .post(
    "/token",
    clientAuthenticated({
      name: "Issue a token",
      controller: "oauth/token#create",
      description: `Grant types: ${[...GRANTS.keys()].join(", ")}. Client authentication by HTTP Basic or client_id and client_secret in the body, never both.`,
      success: { data: tokenResponseSchema, bare: true },
    }),
    validate("form", tokenRequestSchema, "oauth"),
    async (c) => {
      const form = c.req.valid("form");
      // A resource naming this API asks for what every token is without one (RFC 8707).
      const params =
        form.resource !== undefined && namesThisApi(c.env, form.resource) ? { ...form, resource: undefined } : form;
      const client = await authenticateClient(c, params, PUBLIC_CLIENT_GRANTS.has(params.grant_type));
      const grant = GRANTS.get(params.grant_type);
      if (!grant) throw new OAuthError(400, "unsupported_grant_type", "The grant type is not supported");
      if (!client.grantTypes.includes(params.grant_type)) {
        throw new OAuthError(400, "unauthorized_client", "The client is not allowed to use this grant type");
      }
      const requested = params.scope === undefined ? undefined : parseScope(params.scope);
      if (requested && "unsupported" in requested) {
        throw new OAuthError(400, "invalid_scope", "The requested scope is not supported");
      }
      if (requested?.scopes.length && !SCOPED_GRANTS.has(params.grant_type)) {
        throw new OAuthError(400, "invalid_scope", "This grant type takes no scope");
      }
      if (requested && !allowedScopes(client.scope, requested.scopes)) {
        throw new OAuthError(400, "invalid_scope", "The requested scope is not registered for this client");
      }
      if (params.resource !== undefined && API_ONLY_GRANTS.has(params.grant_type)) {
        throw new OAuthError(400, "invalid_target", "This grant issues tokens for this API only");
      }
      const tokens = await grant({ c, client, params, scopes: requested?.scopes, now: nowInSeconds() });
      return c.json(tokens, 200, NO_STORE);
    },
  )
  .post(
    "/revoke",
    clientAuthenticated({
      name: "Revoke a token",
      controller: "oauth/revoke#create",
      description:
        "RFC 7009. An access or refresh token of the authenticated client; any other token is answered the same and left alone. Revoking a refresh token revokes its grant: its family and the access tokens issued under it. A public client names itself by client_id alone; a confidential client needs its secret.",
      success: { data: z.object({}), bare: true },
    }),
    validate("form", tokenQuerySchema, "oauth"),
    async (c) => {
      const params = c.req.valid("form");
      // RFC 7009 §2.1: a public client revokes its own tokens by client_id alone; only its own,
      // so a stranger who knows the id can end no more than the token it already holds.
      const client = await authenticateClient(c, params, true);
      await revokeToken(c, client, params.token, nowInSeconds());
      return c.body(null, 200, NO_STORE);
    },
  )
  .post(
    "/introspect",
    clientAuthenticated({
      name: "Introspect a token",
      controller: "oauth/introspect#create",
      description:
        "RFC 7662. `active: true` and the token's claims for a live access or refresh token of the authenticated client; `active: false` for anything else.",
      success: { data: introspectionResponseSchema, bare: true },
    }),
    validate("form", tokenQuerySchema, "oauth"),
    async (c) => {
      const params = c.req.valid("form");
      // Never a public client: RFC 7662 §2.1 wants an authenticated caller, and a client_id proves nothing.
      const client = await authenticateClient(c, params);
      return c.json(await introspectToken(c, client.id, params.token, nowInSeconds()), 200, NO_STORE);
    },
  )
  .get("/jwks", describeKeySet(), async (c) =>
    c.json(await publicKeySet(c.env), 200, { "Cache-Control": "public, max-age=300" }),
  );
