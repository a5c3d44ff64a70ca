/** grant_type=client_credentials: a server token for the client itself (RFC 6749 §4.4). */
import { OAuthError } from "../../errors";
import { issueAccessToken } from "../tokens";
import type { Grant } from "./grant";

export const clientCredentialsGrant: Grant = async ({ c, client, params, now }) => {
  const audience = params.resource === undefined ? undefined : registeredResource(client, params.resource);
  const accessToken = await issueAccessToken(
    c.env,
    {
      kind: "server",
      clientId: client.id,
      merchantId: client.merchantId,
      userId: null,
      scope: "",
      lifetime: client.accessTokenLifetime,
      audience,
    },
    now,
  );
  return {
    access_token: accessToken,
    token_type: "Bearer",
    expires_in: client.accessTokenLifetime,
    scope: "",
    is_admin: client.admin,
    server_time: now,
  };
};

/**
 * Resource indicators (RFC 8707) are for JWT-enabled clients only, and must name exactly one of
 * the resource-server domains registered for the client; the token is then audience-restricted
 * to that resource and is not accepted by this API.
 */
function registeredResource(client: { jwt: boolean; resources: string[] }, resource: string): string {
  if (!client.jwt) {
    throw new OAuthError(400, "unauthorized_client", "This client is not enabled for resource server tokens");
  }
  if (!client.resources.includes(resource)) {
    throw new OAuthError(400, "invalid_target", "The resource is not registered for this client");
  }
  return resource;
}
