/**
 * A client's settings as the management API takes them (POST /api/2/client, POST
 * /api/2/client/{clientId}; docs/management.md "Creating and changing clients"): a JSON object
 * with the import file's names and bounds (schemas/import.ts). Each field is optional here: a
 * create takes defaults for what it leaves out, an update changes only what it sends. The rules
 * that tie fields together (a default redirect URI among the redirect URIs, loopback URIs for
 * public clients) are checked on the client as it would be (api/manage/client-settings.ts).
 */
import * as z from "zod/mini";
import { MAX_ACCESS_TOKEN_LIFETIME } from "../oauth/lifetimes";
import { SIGNING_ALGORITHMS } from "../oauth/signing-algorithms";
import { API_ENDPOINTS } from "./api-endpoints";
import { CLIENT_FIELDS } from "./client-fields";
import { LIMITS } from "./limits";

export const GRANT_TYPES = [
  "authorization_code",
  "password",
  "assertion",
  "refresh_token",
  "client_credentials",
  "urn:ietf:params:oauth:grant-type:jwt-bearer",
  "urn:ietf:params:oauth:grant-type:token-exchange",
] as const;

/** A public client's refresh tokens are rotated: its client_id proves nothing (RFC 9700 §4.14.2). */
export const PUBLIC_CLIENTS_ROTATE = "a public client's refresh tokens are rotated (RFC 9700 §4.14.2)";

/** The rights: what lets a client act beyond its own users or its merchant, the operator's alone to give. */
export const CLIENT_RIGHTS = ["admin", "universalDataAccess", "unregisteredPayments"] as const;

/**
 * The grants any admin client gives (as registration does, oauth/registration.ts): the others act
 * for users without them (password, assertions, token exchange), and an admin client gives them
 * only when it holds them itself (api/manage/authority.ts heldBeyond).
 */
export const ADMIN_GIVEN_GRANTS: readonly string[] = ["authorization_code", "refresh_token", "client_credentials"];

const text = (max: number = LIMITS.text) => z.string().check(z.minLength(1), z.maxLength(max));
const uris = (max: number) => z.array(text(LIMITS.redirectUri)).check(z.maxLength(max));
/** Each at most once. */
const distinct = <T extends z.ZodMiniType>(item: T, max: number) =>
  z.array(item).check(
    z.maxLength(max),
    z.refine((items) => new Set(items).size === items.length, "each at most once"),
  );

export const clientSettingsSchema = z.strictObject({
  name: z.optional(text()),
  alias: z.optional(z.string().check(z.maxLength(LIMITS.text))),
  domain: z.optional(z.string().check(z.maxLength(LIMITS.text))),
  /** The operator's client only; an admin client's clients are its merchant's. */
  merchantId: z.optional(z.number().check(z.int(), z.positive())),
  redirectUris: z.optional(uris(LIMITS.redirectUris)),
  defaultRedirectUri: z.optional(z.nullable(text(LIMITS.redirectUri))),
  fields: z.optional(
    z.strictObject(
      Object.fromEntries(
        CLIENT_FIELDS.map((name) => [name, z.optional(z.union([z.boolean(), text(LIMITS.shortText)]))]),
      ),
    ),
  ),
  grantTypes: z.optional(distinct(z.enum(GRANT_TYPES), GRANT_TYPES.length)),
  accessTokenLifetime: z.optional(z.number().check(z.int(), z.gte(60), z.lte(MAX_ACCESS_TOKEN_LIFETIME))),
  autoApprove: z.optional(z.boolean()),
  enableSso: z.optional(z.boolean()),
  requireSecondFactor: z.optional(z.boolean()),
  /** Set when the client is made; a client does not become public, or stop being, later. */
  public: z.optional(z.boolean()),
  ipAllowList: z.optional(distinct(z.union([z.ipv4(), z.ipv6()]), LIMITS.ipAllowList)),
  /** The quota: `limit` calls per `windowSeconds`; null for the service's default. */
  rateLimit: z.optional(
    z.nullable(
      z.strictObject({
        limit: z.number().check(z.int(), z.gte(1), z.lte(10_000_000)),
        windowSeconds: z.number().check(z.int(), z.gte(1), z.lte(86_400)),
      }),
    ),
  ),
  /** The /api/2 endpoints the client may call; null for every one. */
  apiEndpoints: z.optional(z.nullable(distinct(z.enum(API_ENDPOINTS), API_ENDPOINTS.length))),
  jwt: z.optional(z.boolean()),
  resources: z.optional(
    distinct(
      z.string().check(z.regex(/^[a-z0-9.-]{1,253}(?::\d{1,5})?$/i, "resources are domain names")),
      LIMITS.resources,
    ),
  ),
  callbackUrl: z.optional(z.nullable(text(LIMITS.url))),
  backchannelLogoutUri: z.optional(z.nullable(text(LIMITS.url))),
  backchannelLogoutSessionRequired: z.optional(z.boolean()),
  refreshTokenRotation: z.optional(z.boolean()),
  postLogoutRedirectUris: z.optional(uris(LIMITS.redirectUris)),
  logoUri: z.optional(z.nullable(text(LIMITS.url))),
  clientUri: z.optional(z.nullable(text(LIMITS.url))),
  scope: z.optional(z.nullable(text())),
  idTokenSignedResponseAlg: z.optional(z.nullable(z.enum(SIGNING_ALGORITHMS))),
  accessTokenSignedResponseAlg: z.optional(z.nullable(z.enum(SIGNING_ALGORITHMS))),
  admin: z.optional(z.boolean()),
  universalDataAccess: z.optional(z.boolean()),
  unregisteredPayments: z.optional(z.boolean()),
});

export type ClientSettings = z.infer<typeof clientSettingsSchema>;
