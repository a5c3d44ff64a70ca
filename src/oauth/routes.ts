/** /oauth/*: the token endpoint and the public keys that verify its tokens. */
import { Hono } from "hono";
import type { AppEnv } from "../env";
import { OAuthError } from "../errors";
import { describeRoute } from "../http/container";
import { nowInSeconds } from "../http/datetime";
import { documented } from "../http/openapi";
import { validate } from "../http/validation";
import { tokenRequestSchema } from "../schemas/oauth";
import { keySetSchema, tokenResponseSchema } from "../schemas/responses/oauth";
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
