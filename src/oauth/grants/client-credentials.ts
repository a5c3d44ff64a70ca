/**
 * grant_type=client_credentials: a server token for the client itself (RFC 6749 §4.4), with the
 * scope asked for (SPiD answered `scope=openid profile` so); every supported scope is the
 * client's to ask for.
 */
import { OAuthError } from "../../errors";
import { type Grant, tokenResponse } from "./grant";

export const clientCredentialsGrant: Grant = async (request) => {
  const { client, params } = request;
  const audience = params.resource === undefined ? undefined : registeredResource(client, params.resource);
  const scope = (request.scopes ?? []).join(" ");
  return tokenResponse(
    request,
    { kind: "server", userId: null, audience, scope },
    { user_id: false, is_admin: client.admin },
  );
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
