/**
 * Who may change what (docs/management.md "Who may do what"). A client's server token manages what
 * that client owns; an `admin` client its merchant (its clients and the users connected to it); a
 * client with `universalDataAccess` is the operator's credential, across merchants. A user's own
 * token manages that user's own connection to its client. Rights are read as stored now, never as
 * they were when the token was issued.
 */
import type { Context } from "hono";
import { readUserProfile } from "../../db/cached-reads";
import { type ClientRecord, type ClientScope, findClientRecord, findClientRights } from "../../db/queries/clients";
import type { UserProfile } from "../../db/queries/users";
import type { AppEnv } from "../../env";
import { ApiError, OAuthError } from "../../errors";
import type { Actor } from "../../events/audit";
import { pathUser } from "../path-user";

/** The right the caller acts in. */
export async function callerAuthority(c: Context<AppEnv>): Promise<Actor> {
  const { clientId, merchantId, kind } = c.get("caller");
  if (kind === "user") return { actor: "user", clientId, merchantId };
  const [rights] = await findClientRights(c.get("db")(), [clientId]);
  const actor = rights?.universalDataAccess ? "operator" : rights?.admin ? "admin" : "client";
  return { actor, clientId, merchantId };
}

/** Refuses a caller that is neither an admin client nor the operator's. */
export function requireAdministration(authority: Actor): void {
  if (authority.actor !== "admin" && authority.actor !== "operator") {
    throw new OAuthError(401, "unauthorized_client", "Your client doesn't have administration rights for this client");
  }
}

const userNotFound = () => new ApiError(404, "invalid_request", "User not found");

/**
 * The path's user as the caller may see it to change it: any user for the operator; otherwise a
 * user connected to the caller's merchant (anyone else is unknown: 404). Read fresh, from D1.
 */
export async function managedUser(c: Context<AppEnv>, authority: Actor): Promise<UserProfile> {
  const userId = await pathUser(c);
  const profile = userId === undefined ? undefined : await readUserProfile(c.get("db"), userId, true);
  if (!profile) throw userNotFound();
  const ofMerchant = profile.connections.some((connection) => connection.merchantId === authority.merchantId);
  if (authority.actor !== "operator" && !ofMerchant) throw userNotFound();
  return profile;
}

/**
 * The account itself (its status, its erasure) is changed by the operator, or by an admin client
 * of the one merchant the user is connected to: no merchant locks a user out of another's service.
 */
export function requireAccountAuthority(authority: Actor, profile: UserProfile): void {
  requireAdministration(authority);
  if (authority.actor === "operator") return;
  if (profile.connections.some((connection) => connection.merchantId !== authority.merchantId)) {
    throw new ApiError(
      403,
      "access_denied",
      "Client or merchant is not authorized to access this user: the user is connected to another merchant too, whose account only the operator changes",
    );
  }
}

/**
 * The clients a change applies to: `requested` (the `clientId` parameter) when the caller may
 * manage it, else all the caller manages: its own client, an admin client's merchant's clients,
 * or every client for the operator.
 */
export async function managedClients(
  c: Context<AppEnv>,
  authority: Actor,
  requested: string[] | undefined,
): Promise<ClientScope> {
  if (requested === undefined) {
    if (authority.actor === "operator") return null;
    if (authority.actor === "admin") return { merchantId: authority.merchantId };
    return { clientId: authority.clientId };
  }
  const [clientId] = requested;
  if (requested.length !== 1 || !clientId) {
    throw new ApiError(400, "invalid_request", "Invalid parameter value: clientId");
  }
  if (clientId === authority.clientId) return { clientId };
  const [target] = await findClientRights(c.get("db")(), [clientId]);
  if (!target) throw new OAuthError(404, "invalid_client_id", "Unknown client ID");
  if (authority.actor === "operator") return { clientId };
  if (target.merchantId !== authority.merchantId) throw new ApiError(404, "invalid_request", "Client ID mismatch");
  if (authority.actor !== "admin") {
    throw new OAuthError(401, "unauthorized_client", "You don't have administration rights for this client");
  }
  return { clientId };
}

/**
 * The path's client, when the caller may manage it: any for the operator; for an admin client,
 * itself and its merchant's clients without rights of their own.
 */
export async function managedClient(c: Context<AppEnv>, authority: Actor): Promise<ClientRecord> {
  requireAdministration(authority);
  const id = c.req.param("clientId") ?? "";
  const client = id.length <= 64 ? await findClientRecord(c.get("db")(), id) : undefined;
  if (!client) throw new OAuthError(404, "invalid_client_id", "Unknown client ID");
  if (authority.actor === "operator") return client;
  if (client.merchantId !== authority.merchantId) throw new ApiError(404, "invalid_request", "Client ID mismatch");
  // An admin client manages the merchant's plain clients and itself, never another client with
  // rights: it could otherwise take over another admin's, or the operator's, credentials.
  if ((client.admin || client.universalDataAccess || client.unregisteredPayments) && client.id !== authority.clientId) {
    throw new OAuthError(
      401,
      "unauthorized_client",
      "Your client doesn't have administration rights for this client: another admin or the operator's client is the operator's to manage",
    );
  }
  return client;
}
