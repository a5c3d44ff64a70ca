/**
 * Client registration: POST /oauth/register (RFC 7591, at SPiD's path) and the registration's
 * own endpoint, GET, PUT and DELETE /oauth/register/{clientId} (RFC 7592).
 *
 * Registering takes an initial access token: a server token of an admin client, and the new client
 * belongs to that client's merchant. The answer (201) carries the client's credentials once: its
 * `client_secret` (none for a public client, `token_endpoint_auth_method: none`) and its
 * `registration_access_token`, which reads, replaces and deletes the registration; only their
 * keyed hashes are stored. Metadata the service does not know is ignored (RFC 7591 §2); known
 * metadata follows the import's rules (schemas/client-metadata.ts), and a value against them is
 * `invalid_redirect_uri` or `invalid_client_metadata`. Changes reach an isolate's cached client
 * (the token endpoint's, a minute) within that minute, as imported changes do.
 */
import { type Context, Hono } from "hono";
import * as z from "zod/mini";
import {
  clientOwnsCommerce,
  type ClientRecord,
  deleteClient,
  findClient,
  changeClient,
  clientRow,
} from "../db/queries/clients";
import type { AppEnv } from "../env";
import { OAuthError } from "../errors";
import { describeRoute } from "../http/container";
import { nowInSeconds } from "../http/datetime";
import { isJson } from "../http/media-type";
import { documented } from "../http/openapi";
import { requireToken } from "../middleware/auth";
import {
  serverEndpointProblem,
  clientScopeProblem,
  pageUriProblem,
  redirectUrisProblem,
  TOKEN_ENDPOINT_AUTH_METHODS,
} from "../schemas/client-metadata";
import { ADMIN_GIVEN_GRANTS } from "../schemas/client-settings";
import { LIMITS } from "../schemas/limits";
import { registrationSchema } from "../schemas/responses/registration";
import { keyRing, movesToCurrentKey, protectSecret, verifySecret } from "../security/data-protection";
import { newClientId, randomToken } from "../security/random-token";
import { forgetClient, rehashUnderCurrentKey } from "./client-auth";
import { NO_STORE, PUBLIC_CLIENT_GRANTS } from "./routes";
import { SIGNING_ALGORITHMS } from "./signing-algorithms";

const text = (max: number) => z.string().check(z.minLength(1), z.maxLength(max));
const uris = z.array(text(LIMITS.redirectUri)).check(z.maxLength(LIMITS.redirectUris));

/** The metadata this service knows; any other member is ignored (RFC 7591 §2). */
const metadataSchema = z.looseObject({
  client_id: z.optional(z.string()),
  client_secret: z.optional(z.string()),
  redirect_uris: z.optional(uris),
  grant_types: z.optional(z.array(z.string()).check(z.maxLength(10))),
  response_types: z.optional(z.array(z.string()).check(z.maxLength(10))),
  token_endpoint_auth_method: z.optional(z.string()),
  client_name: z.optional(text(LIMITS.text)),
  logo_uri: z.optional(text(LIMITS.url)),
  client_uri: z.optional(text(LIMITS.url)),
  post_logout_redirect_uris: z.optional(uris),
  backchannel_logout_uri: z.optional(text(LIMITS.url)),
  backchannel_logout_session_required: z.optional(z.boolean()),
  id_token_signed_response_alg: z.optional(z.string()),
  scope: z.optional(text(LIMITS.text)),
});
type Metadata = z.infer<typeof metadataSchema>;

/** The client's registrable fields, as stored. */
type RegisteredFields = Pick<
  ClientRecord,
  | "name"
  | "redirectUris"
  | "grantTypes"
  | "publicClient"
  | "tokenEndpointAuthMethod"
  | "logoUri"
  | "clientUri"
  | "postLogoutRedirectUris"
  | "backchannelLogoutUri"
  | "backchannelLogoutSessionRequired"
  | "idTokenSignedResponseAlg"
  | "scope"
>;

export const registrationRoutes = new Hono<AppEnv>()
  .post(
    "/register",
    describeRoute({
      name: "Register a client",
      controller: "oauth/register#create",
      description:
        "RFC 7591. The initial access token is a server token of an admin client; the new client belongs to its merchant. Answers the client's metadata with its `client_id`, its `client_secret` (not for `token_endpoint_auth_method: none`) and its `registration_access_token`, once.",
      success: { data: registrationSchema, bare: true, status: 201 },
    }),
    documented(requireToken("register", "server"), {
      requestBody: { schema: metadataSchema, mediaType: "application/json" },
    }),
    async (c) => {
      const db = c.get("db")();
      const admin = await findClient(db, c.get("caller").clientId);
      if (!admin?.admin) {
        throw new OAuthError(
          403,
          "insufficient_scope",
          "Your client doesn't have administration rights for this client",
        );
      }
      const fields = registeredFields(await metadataOf(c), c.env.ENVIRONMENT);
      const id = newClientId();
      const secret = fields.publicClient ? undefined : randomToken();
      const registrationToken = randomToken();
      const ring = keyRing(c.env);
      await clientRow(db, {
        ...fields,
        id,
        merchantId: admin.merchantId,
        // Never more than the client that registered it: its endpoint grants (registering no
        // further clients) and its allow-list.
        apiEndpoints: admin.apiEndpoints?.filter((endpoint) => endpoint !== "register") ?? null,
        ipAllowList: admin.ipAllowList,
        rateLimit: admin.rateLimit,
        // A public client's secret is one nobody knows: no secret matches it.
        secretHash: await protectSecret(ring, secret ?? randomToken()),
        registrationTokenHash: await protectSecret(ring, registrationToken),
        enableSso: true,
      }).run();
      const client = (await findClient(db, id))!;
      return c.json(registrationView(c, client, { secret, registrationToken }), 201, NO_STORE);
    },
  )
  .get(
    "/register/:clientId",
    describeRoute({
      name: "Read a client registration",
      controller: "oauth/register#show",
      description: "RFC 7592, with the registration access token as the Bearer token.",
      success: { data: registrationSchema, bare: true },
    }),
    async (c) => c.json(registrationView(c, await registeredClient(c)), 200, NO_STORE),
  )
  .put(
    "/register/:clientId",
    describeRoute({
      name: "Update a client registration",
      controller: "oauth/register#update",
      description:
        "RFC 7592: the client's whole metadata, replacing what was registered (absent members take their defaults), with `client_id`, and `client_secret` only if it is the current one. With the registration access token as the Bearer token.",
      success: { data: registrationSchema, bare: true },
    }),
    async (c) => {
      const client = await registeredClient(c);
      const metadata = await metadataOf(c);
      if (metadata.client_id !== client.id) {
        throw new OAuthError(400, "invalid_request", "Member 'client_id' must be the registration's client id");
      }
      if (
        metadata.client_secret !== undefined &&
        !(await verifySecret(keyRing(c.env), metadata.client_secret, client.secretHash))
      ) {
        throw new OAuthError(400, "invalid_request", "Member 'client_secret' is not the client's secret");
      }
      const fields = registeredFields(metadata, c.env.ENVIRONMENT);
      if (fields.publicClient !== client.publicClient) {
        throw new OAuthError(
          400,
          "invalid_client_metadata",
          "A registration cannot change between a public and a confidential client",
        );
      }
      const db = c.get("db")();
      await changeClient(db, client.id, fields, nowInSeconds()).run();
      forgetClient(client.id);
      return c.json(registrationView(c, (await findClient(db, client.id))!), 200, NO_STORE);
    },
  )
  .delete(
    "/register/:clientId",
    describeRoute({
      name: "Delete a client registration",
      controller: "oauth/register#destroy",
      description:
        "RFC 7592: the client is deleted, its refresh tokens and its users' connections with it; its access tokens stop working within a minute. A client that owns products or digital content cannot be deleted (400).",
      success: { data: z.null(), bare: true, status: 204 },
    }),
    async (c) => {
      const client = await registeredClient(c);
      const db = c.get("db")();
      if (await clientOwnsCommerce(db, client.id)) {
        throw new OAuthError(
          400,
          "invalid_request",
          "The client owns products or digital content and cannot be deleted",
        );
      }
      await deleteClient(db, client.id);
      forgetClient(client.id);
      return c.body(null, 204, NO_STORE);
    },
  );

/** The request's JSON body, parsed with the metadata schema; refused as invalid_client_metadata. */
async function metadataOf(c: Context<AppEnv>): Promise<Metadata> {
  if (!isJson(c.req.header("Content-Type"))) {
    throw new OAuthError(400, "invalid_client_metadata", "The request body must be application/json");
  }
  let body: unknown;
  try {
    body = await c.req.json();
  } catch {
    throw new OAuthError(400, "invalid_client_metadata", "The request body is not JSON");
  }
  const parsed = z.safeParse(metadataSchema, body);
  if (!parsed.success) {
    const member = parsed.error.issues[0]?.path.join(".") || "request";
    throw new OAuthError(400, "invalid_client_metadata", `Member '${member}' is invalid`);
  }
  return parsed.data;
}

/** The metadata as the client's fields, each by its rules; defaults as RFC 7591 §2 gives them. */
function registeredFields(metadata: Metadata, environment: string): RegisteredFields {
  const invalid = (description: string) => new OAuthError(400, "invalid_client_metadata", description);
  const method = metadata.token_endpoint_auth_method ?? "client_secret_basic";
  if (!(TOKEN_ENDPOINT_AUTH_METHODS as readonly string[]).includes(method)) {
    throw invalid("token_endpoint_auth_method must be client_secret_basic, client_secret_post or none");
  }
  const publicClient = method === "none";
  const grantTypes = [...new Set(metadata.grant_types ?? ["authorization_code"])];
  const allowed = publicClient ? [...PUBLIC_CLIENT_GRANTS] : ADMIN_GIVEN_GRANTS;
  const refused = grantTypes.find((grant) => !allowed.includes(grant));
  if (refused !== undefined) throw invalid(`Grant type '${refused}' cannot be registered for this client`);
  const responseTypes = [...new Set(metadata.response_types ?? ["code"])];
  if (responseTypes.some((type) => type !== "code")) throw invalid("Only response type code is supported");
  if (grantTypes.includes("authorization_code") !== responseTypes.includes("code")) {
    throw invalid("Response type code and grant type authorization_code go together");
  }
  const redirectUris = [...new Set(metadata.redirect_uris ?? [])];
  if (grantTypes.includes("authorization_code") && redirectUris.length === 0) {
    throw new OAuthError(400, "invalid_redirect_uri", "The authorization code grant needs redirect_uris");
  }
  const postLogoutRedirectUris = [...new Set(metadata.post_logout_redirect_uris ?? [])];
  const redirectProblem =
    redirectUrisProblem(redirectUris, publicClient) ?? redirectUrisProblem(postLogoutRedirectUris, publicClient);
  if (redirectProblem !== null) throw new OAuthError(400, "invalid_redirect_uri", redirectProblem);
  for (const member of ["logo_uri", "client_uri"] as const) {
    const uri = metadata[member];
    const problem = uri === undefined ? null : pageUriProblem(uri);
    if (problem !== null) throw invalid(`${member} ${problem}`);
  }
  const backchannel = metadata.backchannel_logout_uri;
  const backchannelProblem =
    backchannel === undefined ? null : serverEndpointProblem(backchannel, { loopback: environment === "development" });
  if (backchannelProblem !== null) throw invalid(`backchannel_logout_uri ${backchannelProblem}`);
  const alg = metadata.id_token_signed_response_alg ?? "RS256";
  if (!(SIGNING_ALGORITHMS as readonly string[]).includes(alg)) {
    throw invalid("id_token_signed_response_alg must be RS256 or EdDSA");
  }
  const scope = metadata.scope === undefined ? null : [...new Set(metadata.scope.split(" "))].join(" ");
  const scopeProblem = scope === null ? null : clientScopeProblem(scope);
  if (scopeProblem !== null) throw invalid(`scope: ${scopeProblem}`);
  return {
    name: metadata.client_name ?? "Unnamed client",
    redirectUris,
    grantTypes,
    publicClient,
    tokenEndpointAuthMethod: method as RegisteredFields["tokenEndpointAuthMethod"],
    logoUri: metadata.logo_uri ?? null,
    clientUri: metadata.client_uri ?? null,
    postLogoutRedirectUris,
    backchannelLogoutUri: backchannel ?? null,
    backchannelLogoutSessionRequired: metadata.backchannel_logout_session_required ?? false,
    idTokenSignedResponseAlg: alg as RegisteredFields["idTokenSignedResponseAlg"],
    scope,
  };
}

/**
 * The client the path names, when the Bearer token is its registration access token. Anything
 * else (no token, another token, an unknown or imported client) is the same 401 (RFC 7592 §2).
 */
async function registeredClient(c: Context<AppEnv>): Promise<ClientRecord> {
  const token = /^Bearer +(\S+) *$/i.exec(c.req.header("Authorization") ?? "")?.[1];
  const id = c.req.param("clientId") ?? "";
  const client = token && id.length <= 64 ? await findClient(c.get("db")(), id) : undefined;
  const stored = client?.registrationTokenHash;
  const valid = token !== undefined && stored ? await verifySecret(keyRing(c.env), token, stored) : null;
  if (!client || !valid) {
    throw new OAuthError(401, "invalid_token", "The registration access token is not valid for this client", {
      "WWW-Authenticate": 'Bearer error="invalid_token"',
    });
  }
  if (valid === "previous" && movesToCurrentKey(keyRing(c.env), nowInSeconds())) {
    rehashUnderCurrentKey(c, client.id, "registrationTokenHash", stored!, token!);
  }
  return client;
}

/** The registration as RFC 7591 §3.2.1 answers it; the credentials only when just made. */
function registrationView(
  c: Context<AppEnv>,
  client: ClientRecord,
  made: { secret?: string | undefined; registrationToken?: string } = {},
): z.infer<typeof registrationSchema> {
  return {
    client_id: client.id,
    client_id_issued_at: client.created,
    ...(made.secret !== undefined && { client_secret: made.secret, client_secret_expires_at: 0 }),
    ...(made.registrationToken !== undefined && { registration_access_token: made.registrationToken }),
    registration_client_uri: `${c.env.BASE_URL}/oauth/register/${client.id}`,
    client_name: client.name,
    redirect_uris: client.redirectUris,
    grant_types: client.grantTypes,
    response_types: client.grantTypes.includes("authorization_code") ? ["code"] : [],
    token_endpoint_auth_method:
      client.tokenEndpointAuthMethod ?? (client.publicClient ? "none" : "client_secret_basic"),
    post_logout_redirect_uris: client.postLogoutRedirectUris,
    backchannel_logout_session_required: client.backchannelLogoutSessionRequired,
    id_token_signed_response_alg: client.idTokenSignedResponseAlg ?? "RS256",
    ...(client.logoUri !== null && { logo_uri: client.logoUri }),
    ...(client.clientUri !== null && { client_uri: client.clientUri }),
    ...(client.backchannelLogoutUri !== null && { backchannel_logout_uri: client.backchannelLogoutUri }),
    ...(client.scope !== null && { scope: client.scope }),
  };
}
