/**
 * Whose data a call reads (docs/security.md "Reading another client's data"): the calling client's own, or,
 * with a `clientId` parameter, another client of the same merchant when the calling client has
 * administrative rights (its `admin` flag, as stored now, not as it was when the token was issued).
 */
import type { Context } from "hono";
import { findClientRights } from "../db/queries/clients";
import type { AppEnv } from "../env";
import { ApiError, OAuthError } from "../errors";

/** The `clientId` parameter, as the OpenAPI document describes it on each endpoint that takes it. */
export const CLIENT_ID_PARAMETER = "Another client of the merchant to read (admin clients only)";

export async function readableClientId(c: Context<AppEnv>, requested: string[] | undefined): Promise<string> {
  const caller = c.get("caller");
  if (requested === undefined) return caller.clientId;
  const [clientId] = requested;
  if (requested.length !== 1 || !clientId)
    throw new ApiError(400, "invalid_request", "Invalid parameter value: clientId");
  if (clientId === caller.clientId) return clientId;
  const found = await findClientRights(c.get("db")(), [caller.clientId, clientId]);
  const target = found.find((client) => client.id === clientId);
  if (!target) throw new OAuthError(404, "invalid_client_id", "Unknown client ID");
  if (target.merchantId !== caller.merchantId) throw new ApiError(404, "invalid_request", "Client ID mismatch");
  if (caller.kind === "user") {
    throw new OAuthError(401, "unauthorized_client", "You don't have administration rights for this client");
  }
  if (!found.find((client) => client.id === caller.clientId)?.admin) {
    throw new OAuthError(401, "unauthorized_client", "Your client doesn't have administration rights for this client");
  }
  return clientId;
}
