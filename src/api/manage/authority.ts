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
import { DEFAULT_RATE_LIMIT } from "../../durable-objects/client-policy";
import type { Actor } from "../../events/audit";
import { ADMIN_GIVEN_GRANTS, CLIENT_RIGHTS } from "../../schemas/client-settings";
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

/** What a client's grants and limits are compared by (heldBeyond). */
export type Holdings = Pick<
  ClientRecord,
  | "admin"
  | "universalDataAccess"
  | "unregisteredPayments"
  | "autoApprove"
  | "jwt"
  | "resources"
  | "grantTypes"
  | "apiEndpoints"
  | "rateLimit"
  | "ipAllowList"
>;

/**
 * What `client` holds that the admin client `admin` does not, or null: a right (those are the
 * operator's alone), a grant beyond registration's and the admin's own, consent skipped, tokens
 * for other services, an endpoint, a larger quota (by limit or window) or a wider allow-list. An
 * admin client neither manages nor makes a client that holds more than it has.
 */
export function heldBeyond(client: Holdings, admin: Holdings): string | null {
  const right = CLIENT_RIGHTS.find((name) => client[name]);
  if (right !== undefined) return right;
  const grant = client.grantTypes.find(
    (type) => !ADMIN_GIVEN_GRANTS.includes(type) && !admin.grantTypes.includes(type),
  );
  if (grant !== undefined) return `grant type ${grant}`;
  if (client.autoApprove && !admin.autoApprove) return "autoApprove";
  if (client.jwt && !admin.jwt) return "jwt";
  if (client.resources.some((resource) => !admin.resources.includes(resource))) return "resources";
  const endpoints = admin.apiEndpoints;
  if (endpoints !== null && (client.apiEndpoints === null || client.apiEndpoints.some((e) => !endpoints.includes(e)))) {
    return "apiEndpoints";
  }
  const quota = client.rateLimit ?? DEFAULT_RATE_LIMIT;
  const own = admin.rateLimit ?? DEFAULT_RATE_LIMIT;
  if (quota.limit > own.limit || quota.windowSeconds < own.windowSeconds) return "rateLimit";
  const addresses = admin.ipAllowList;
  if (
    addresses.length > 0 &&
    (client.ipAllowList.length === 0 || client.ipAllowList.some((a) => !addresses.includes(a)))
  ) {
    return "ipAllowList";
  }
  return null;
}

/**
 * The path's client, when the caller may manage it: any for the operator; for an admin client,
 * itself and its merchant's clients that hold nothing it does not (heldBeyond).
 */
export async function managedClient(c: Context<AppEnv>, authority: Actor): Promise<ClientRecord> {
  requireAdministration(authority);
  const id = c.req.param("clientId") ?? "";
  const client = id.length <= 64 ? await findClientRecord(c.get("db")(), id) : undefined;
  if (!client) throw new OAuthError(404, "invalid_client_id", "Unknown client ID");
  if (authority.actor === "operator") return client;
  if (client.merchantId !== authority.merchantId) throw new ApiError(404, "invalid_request", "Client ID mismatch");
  // An admin client manages itself and the merchant's clients that hold nothing it lacks: with a
  // new secret it would otherwise hold another admin's, or the operator's, or a grant it lacks.
  if (client.id === authority.clientId) return client;
  const beyond = heldBeyond(client, (await findClientRecord(c.get("db")(), authority.clientId))!);
  if (beyond !== null) {
    throw new OAuthError(
      401,
      "unauthorized_client",
      `Your client doesn't have administration rights for this client: another admin or the operator's client, or one holding more than yours (${beyond}), is the operator's to manage`,
    );
  }
  return client;
}
