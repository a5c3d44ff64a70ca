/**
 * Creating and changing clients through the API (docs/management.md "Creating and changing
 * clients"): POST /api/2/client makes one, POST /api/2/client/{clientId} changes the settings
 * sent. An admin client makes and changes its merchant's plain clients, never with more than it
 * has itself (its endpoint grants, its quota), and does not loosen its own limits; the operator's
 * client any client, and the rights (`admin`, `universalDataAccess`, `unregisteredPayments`).
 * The same records RFC 7592 registration changes (oauth/registration.ts), by the same rules
 * (schemas/client-metadata.ts). Each write is one D1 batch with its audit entry; the changed
 * client is forgotten by this isolate at once, by the others within a minute, and its quota,
 * allow-list and endpoint grants reach every call within a policy refresh and a lease (5 + 5 s).
 */
import { type Context, Hono } from "hono";
import { violatesUnique } from "../../db/constraints";
import type { clients } from "../../db/schema";
import { changeClient, type ClientRecord, clientRow, findClientRecord, merchantExists } from "../../db/queries/clients";
import type { AppEnv } from "../../env";
import { ApiError, OAuthError } from "../../errors";
import { type Actor, auditEntry } from "../../events/audit";
import { describeRoute, respond } from "../../http/container";
import { formatDatetime, nowInSeconds } from "../../http/datetime";
import {
  earlierResource,
  IDEMPOTENCY_KEY_PARAMETER,
  idempotencyOf,
  keyRecord,
  openKeptSecret,
} from "../../http/idempotency";
import { validate } from "../../http/validation";
import { requireToken } from "../../middleware/auth";
import { forgetClient } from "../../oauth/client-auth";
import { PUBLIC_CLIENT_GRANTS } from "../../oauth/routes";
import {
  clientScopeProblem,
  pageUriProblem,
  redirectUrisProblem,
  serverEndpointProblem,
} from "../../schemas/client-metadata";
import {
  CLIENT_RIGHTS,
  type ClientSettings,
  clientSettingsSchema,
  PUBLIC_CLIENTS_ROTATE,
} from "../../schemas/client-settings";
import { clientSettingsResponseSchema } from "../../schemas/responses/management";
import { keyRing, protectSecret, sealSecret } from "../../security/data-protection";
import { newClientId, randomToken } from "../../security/random-token";
import { callerAuthority, heldBeyond, type Holdings, managedClient, requireAdministration } from "./authority";

type Stored = typeof clients.$inferInsert;

/** The settings as the client's columns (the import's `public` and `ipAllowList` have their own names there). */
function columnsOf(settings: ClientSettings): Partial<Stored> {
  const { public: publicClient, merchantId: _, ...rest } = settings;
  return {
    ...rest,
    ...(publicClient !== undefined && {
      publicClient,
      tokenEndpointAuthMethod: publicClient ? ("none" as const) : null,
    }),
  };
}

const NO_ADMINISTRATION_RIGHTS = "Your client doesn't have administration rights for this client";

/**
 * What an admin client may not set: the rights (the operator's alone) and, on itself, the limits
 * the operator set it (grants, allow-list, endpoint grants, quota). The client as it would be must
 * hold nothing the admin lacks (heldBeyond). A client it makes without endpoint grants, quota or
 * allow-list takes the admin's own, as a registered one does. Answers the settings to write.
 */
async function requireSettingsAuthority(
  c: Context<AppEnv>,
  authority: Actor,
  settings: ClientSettings,
  target: ClientRecord | null,
): Promise<ClientSettings> {
  if (authority.actor === "operator") return settings;
  const right = CLIENT_RIGHTS.find((name) => settings[name] !== undefined);
  if (right !== undefined) {
    throw new OAuthError(
      403,
      "access_denied",
      `${NO_ADMINISTRATION_RIGHTS}: only the operator's client gives a client rights (${right})`,
    );
  }
  if (target?.id === authority.clientId) {
    const own = (
      ["grantTypes", "autoApprove", "jwt", "resources", "ipAllowList", "apiEndpoints", "rateLimit"] as const
    ).find((name) => settings[name] !== undefined);
    if (own !== undefined) {
      throw new OAuthError(403, "access_denied", `A client does not change its own ${own}: the operator's client does`);
    }
    return settings;
  }
  const admin = (await findClientRecord(c.get("db")(), authority.clientId))!;
  const allowed: ClientSettings =
    target === null
      ? {
          ...settings,
          apiEndpoints: settings.apiEndpoints === undefined ? admin.apiEndpoints : settings.apiEndpoints,
          rateLimit: settings.rateLimit === undefined ? admin.rateLimit : settings.rateLimit,
          ipAllowList: settings.ipAllowList ?? admin.ipAllowList,
        }
      : settings;
  const beyond = heldBeyond({ ...(target ?? NEW_CLIENT), ...columnsOf(allowed) } as Holdings, admin);
  if (beyond !== null) {
    throw new OAuthError(403, "access_denied", `${NO_ADMINISTRATION_RIGHTS}: no more than it has itself (${beyond})`);
  }
  return allowed;
}

/** What a client made without a setting holds (the import's defaults). */
const NEW_CLIENT: Holdings = {
  admin: false,
  universalDataAccess: false,
  unregisteredPayments: false,
  autoApprove: false,
  jwt: false,
  resources: [],
  grantTypes: [],
  apiEndpoints: null,
  rateLimit: null,
  ipAllowList: [],
};

/**
 * Why the client, as it would be with the settings, cannot be; null when it can. The rules that tie
 * fields together are checked on the whole client; a single field's only when `sent` (an imported
 * value the API's rules are stricter for does not stop a change of something else).
 */
function settingsProblem(client: ClientRecord | Stored, sent: Partial<Stored>, environment: string): string | null {
  const publicClient = client.publicClient ?? false;
  const redirectUris = client.redirectUris ?? [];
  const grantTypes = client.grantTypes ?? [];
  const uris =
    redirectUrisProblem(redirectUris, publicClient) ??
    redirectUrisProblem(client.postLogoutRedirectUris ?? [], publicClient);
  if (uris !== null) return `redirectUris: ${uris}`;
  if (client.defaultRedirectUri != null && !redirectUris.includes(client.defaultRedirectUri)) {
    return "defaultRedirectUri must be one of redirectUris";
  }
  if (grantTypes.includes("authorization_code") && redirectUris.length === 0) {
    return "grantTypes: the authorization code grant needs redirectUris";
  }
  const unfit = publicClient ? grantTypes.find((grant) => !PUBLIC_CLIENT_GRANTS.has(grant)) : undefined;
  if (unfit !== undefined) return `grantTypes: a public client has no ${unfit} grant`;
  if (publicClient && client.refreshTokenRotation === false) return `refreshTokenRotation: ${PUBLIC_CLIENTS_ROTATE}`;
  const loopback = { loopback: environment === "development" };
  for (const name of ["callbackUrl", "backchannelLogoutUri"] as const) {
    const uri = sent[name];
    const problem = uri == null ? null : serverEndpointProblem(uri, loopback);
    if (problem !== null) return `${name} ${problem}`;
  }
  for (const name of ["logoUri", "clientUri"] as const) {
    const uri = sent[name];
    const problem = uri == null ? null : pageUriProblem(uri);
    if (problem !== null) return `${name} ${problem}`;
  }
  const scopeProblem = sent.scope == null ? null : clientScopeProblem(sent.scope);
  return scopeProblem === null ? null : `scope: ${scopeProblem}`;
}

function refuseProblem(problem: string | null): void {
  if (problem !== null) throw new ApiError(400, "invalid_request", `Invalid parameter value: ${problem}`);
}

/** The client's settings as the API answers them: never a secret or a hash. */
function settingsView(client: ClientRecord) {
  return {
    clientId: client.id,
    merchantId: client.merchantId,
    name: client.name,
    alias: client.alias,
    domain: client.domain,
    status: client.disabled === null ? ("active" as const) : ("disabled" as const),
    redirectUris: client.redirectUris,
    defaultRedirectUri: client.defaultRedirectUri,
    fields: client.fields,
    grantTypes: client.grantTypes,
    accessTokenLifetime: client.accessTokenLifetime,
    autoApprove: client.autoApprove,
    enableSso: client.enableSso,
    requireSecondFactor: client.requireSecondFactor,
    public: client.publicClient,
    ipAllowList: client.ipAllowList,
    rateLimit: client.rateLimit,
    apiEndpoints: client.apiEndpoints,
    jwt: client.jwt,
    resources: client.resources,
    callbackUrl: client.callbackUrl,
    backchannelLogoutUri: client.backchannelLogoutUri,
    backchannelLogoutSessionRequired: client.backchannelLogoutSessionRequired,
    refreshTokenRotation: client.refreshTokenRotation,
    postLogoutRedirectUris: client.postLogoutRedirectUris,
    logoUri: client.logoUri,
    clientUri: client.clientUri,
    scope: client.scope,
    idTokenSignedResponseAlg: client.idTokenSignedResponseAlg,
    accessTokenSignedResponseAlg: client.accessTokenSignedResponseAlg,
    admin: client.admin,
    universalDataAccess: client.universalDataAccess,
    unregisteredPayments: client.unregisteredPayments,
    created: formatDatetime(client.created),
    updated: formatDatetime(client.updated),
  };
}

/** The names of the settings sent, for the audit trail (never their values). */
const sentNames = (settings: ClientSettings) => Object.keys(settings).sort();

export const clientSettingsRoutes = new Hono<AppEnv>()
  .post(
    "/client",
    describeRoute({
      name: "Create a client",
      controller: "api/manage/client-settings#create",
      description:
        "A JSON object with the import file's client fields (docs/management.md): `name` is required, the rest take the import's defaults. The client belongs to the caller's merchant (the operator's client may name another with `merchantId`). Answers its settings with its `clientSecret` (none for a public client) and `signingSecret`, once; an `Idempotency-Key` makes a retry answer the same client and secrets for a day. An admin client, or the operator's.",
      parameters: [IDEMPOTENCY_KEY_PARAMETER],
      success: { status: 201, data: clientSettingsResponseSchema },
    }),
    requireToken("client/create", "server"),
    validate("json", clientSettingsSchema),
    async (c) => {
      const authority = await callerAuthority(c);
      requireAdministration(authority);
      const settings = c.req.valid("json");
      if (settings.name === undefined) throw new ApiError(400, "invalid_request", "Parameter 'name' is missing");
      const merchantId = settings.merchantId ?? authority.merchantId;
      if (authority.actor !== "operator" && merchantId !== authority.merchantId) {
        throw new OAuthError(403, "access_denied", "An admin client makes clients of its own merchant only");
      }
      const allowed = await requireSettingsAuthority(c, authority, settings, null);
      const db = c.get("db")();
      if (!(await merchantExists(db, merchantId))) throw new ApiError(404, "invalid_request", "Merchant not found");
      const now = nowInSeconds();
      const ring = keyRing(c.env);
      const idempotency = await idempotencyOf(c, authority.clientId);
      const made = async () => {
        const resource = await earlierResource(db, idempotency, now);
        if (resource === undefined) return undefined;
        const [id, sealedSecret, sealedSigning] = resource.slice("client:".length).split(" ") as [
          string,
          string,
          string,
        ];
        const client = await findClientRecord(db, id);
        return (
          client &&
          respond(
            c,
            {
              object: "ClientSettings",
              data: {
                ...settingsView(client),
                ...(sealedSecret !== "-" && { clientSecret: await openKeptSecret(c.env, sealedSecret) }),
                signingSecret: await openKeptSecret(c.env, sealedSigning),
              },
            },
            201,
          )
        );
      };
      const earlier = await made();
      if (earlier) return earlier;
      const record: Stored = {
        ...columnsOf(allowed),
        name: settings.name,
        id: newClientId(),
        merchantId,
        secretHash: "",
        created: now,
        updated: now,
      };
      refuseProblem(settingsProblem(record, record, c.env.ENVIRONMENT));
      const secret = record.publicClient ? undefined : randomToken();
      const signingSecret = randomToken();
      const signingSecretSealed = await sealSecret(ring, signingSecret);
      // A public client's secret is one nobody knows: no secret matches it.
      record.secretHash = await protectSecret(ring, secret ?? randomToken());
      record.signingSecretSealed = signingSecretSealed;
      const kept = `client:${record.id} ${secret === undefined ? "-" : await sealSecret(ring, secret)} ${signingSecretSealed}`;
      try {
        await db.batch([
          clientRow(db, record),
          auditEntry(
            c,
            authority,
            { action: "client.create", targetClientId: record.id, detail: { fields: sentNames(settings) } },
            now,
          ),
          ...keyRecord(db, idempotency, kept, now),
        ]);
      } catch (err) {
        // A racing request with the same key made its client first: answer that one.
        const raced = violatesUnique(err, "idempotency_keys") ? await made() : undefined;
        if (raced) return raced;
        throw err;
      }
      const client = (await findClientRecord(db, record.id))!;
      return respond(
        c,
        {
          object: "ClientSettings",
          data: { ...settingsView(client), ...(secret !== undefined && { clientSecret: secret }), signingSecret },
        },
        201,
      );
    },
  )
  .post(
    "/client/:clientId",
    describeRoute({
      name: "Change a client",
      controller: "api/manage/client-settings#update",
      description:
        "A JSON object of the settings to change (the fields of POST /api/2/client but `merchantId` and `public`, which a client keeps); the others stay. Secrets change by rotation (`/secret`, `/signing-secret`), the status by `/status`. Sign-in and tokens take a change within a minute; quota, allow-list and endpoint grants within 10 seconds. An admin client for itself and its merchant's plain clients, the operator's client for any.",
      success: { data: clientSettingsResponseSchema },
    }),
    requireToken("client/update", "server"),
    validate("json", clientSettingsSchema),
    async (c) => {
      const authority = await callerAuthority(c);
      const client = await managedClient(c, authority);
      const settings = c.req.valid("json");
      const kept = (["merchantId", "public"] as const).find((name) => settings[name] !== undefined);
      if (kept !== undefined) {
        throw new ApiError(400, "invalid_request", `Invalid parameter value: ${kept} is set when the client is made`);
      }
      if (Object.keys(settings).length === 0) throw new ApiError(400, "invalid_request", "No field to change was sent");
      await requireSettingsAuthority(c, authority, settings, client);
      const changed = columnsOf(settings);
      refuseProblem(settingsProblem({ ...client, ...changed }, changed, c.env.ENVIRONMENT));
      const now = nowInSeconds();
      const db = c.get("db")();
      await db.batch([
        changeClient(db, client.id, changed, now),
        auditEntry(
          c,
          authority,
          { action: "client.update", targetClientId: client.id, detail: { fields: sentNames(settings) } },
          now,
        ),
      ]);
      forgetClient(client.id);
      return respond(c, { object: "ClientSettings", data: settingsView({ ...client, ...changed, updated: now }) });
    },
  );
