/** /oauth/*: the token endpoint and the public keys that verify its tokens. */
import { Hono } from "hono";
import type * as z from "zod/mini";
import type { AppEnv } from "../env";
import { OAuthError } from "../errors";
import { describeRoute } from "../http/container";
import { nowInSeconds } from "../http/datetime";
import { documented } from "../http/openapi";
import { validate } from "../http/validation";
import { tokenRequestSchema } from "../schemas/oauth";
import { keySetSchema, serverMetadataSchema, tokenResponseSchema } from "../schemas/responses/oauth";
import { authenticateClient } from "./client-auth";
import { clientCredentialsGrant } from "./grants/client-credentials";
import type { Grant } from "./grants/grant";
import { passwordGrant } from "./grants/password";
import { refreshTokenGrant } from "./grants/refresh-token";
import { publicKeySet } from "./tokens";

const GRANTS = new Map<string, Grant>([
  ["password", passwordGrant],
  ["client_credentials", clientCredentialsGrant],
  ["refresh_token", refreshTokenGrant],
]);

/** What /api/2/status reports: the grants this deployment actually accepts. */
export const SUPPORTED_GRANT_TYPES = [...GRANTS.keys()];

/**
 * GET /.well-known/oauth-authorization-server (RFC 8414), for discovery by standard clients.
 * `issuer` is exactly the base URL, as the tokens' `iss`; the grants are those `/oauth/token`
 * accepts, as the status endpoint lists them. No authorization endpoint yet, so no response types.
 */
export const metadataRoutes = new Hono<AppEnv>().get(
  "/oauth-authorization-server",
  describeRoute({
    name: "Get the authorization server metadata",
    controller: "oauth/metadata#show",
    success: { data: serverMetadataSchema, bare: true },
  }),
  (c) => {
    const base = c.env.BASE_URL;
    const metadata: z.infer<typeof serverMetadataSchema> = {
      issuer: base,
      token_endpoint: `${base}/oauth/token`,
      jwks_uri: `${base}/.well-known/jwks.json`,
      grant_types_supported: SUPPORTED_GRANT_TYPES,
      token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
      response_types_supported: [],
      service_documentation: `${base}/api/2/reference`,
    };
    return c.json(metadata, 200, { "Cache-Control": "public, max-age=300" });
  },
);

/** The public keys, here and at /.well-known/jwks.json. */
export const describeKeySet = () =>
  describeRoute({
    name: "Get the token signing keys",
    controller: "oauth/jwks#show",
    success: { data: keySetSchema, bare: true },
  });

export const oauthRoutes = new Hono<AppEnv>()
  .post(
    "/token",
    documented(
      describeRoute({
        name: "Issue a token",
        controller: "oauth/token#create",
        description: `Grant types: ${[...GRANTS.keys()].join(", ")}. Client authentication by HTTP Basic or client_id and client_secret in the body, never both.`,
        success: { data: tokenResponseSchema, bare: true },
      }),
      { security: [{ clientCredentials: [] }, {}] },
    ),
    validate("form", tokenRequestSchema, "oauth"),
    async (c) => {
      const params = c.req.valid("form");
      const client = await authenticateClient(c, params);
      const grant = GRANTS.get(params.grant_type);
      if (!grant) throw new OAuthError(400, "unsupported_grant_type", "The grant type is not supported");
      if (!client.grantTypes.includes(params.grant_type)) {
        throw new OAuthError(400, "unauthorized_client", "The client is not allowed to use this grant type");
      }
      if (params.scope) throw new OAuthError(400, "invalid_scope", "No scopes are defined for this client");
      const tokens = await grant({ c, client, params, now: nowInSeconds() });
      return c.json(tokens, 200, { "Cache-Control": "no-store", Pragma: "no-cache" });
    },
  )
  .get("/jwks", describeKeySet(), async (c) =>
    c.json(await publicKeySet(c.env), 200, { "Cache-Control": "public, max-age=300" }),
  );
