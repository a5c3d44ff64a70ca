/** Merchants and their OAuth clients: each client's settings, secrets and grants. */
import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import type { SigningAlgorithm } from "../../oauth/signing-algorithms";
import type { ApiEndpoint } from "../../schemas/api-endpoints";
import { now } from "./now";

export const merchants = sqliteTable("merchants", {
  id: integer("id").primaryKey(),
  name: text("name").notNull(),
  created: integer("created").notNull().default(now),
  updated: integer("updated").notNull().default(now),
});

export type TokenEndpointAuthMethod = "client_secret_basic" | "client_secret_post" | "none";

export type RateLimitSetting = { limit: number; windowSeconds: number };

export const clients = sqliteTable(
  "clients",
  {
    id: text("id").primaryKey(),
    merchantId: integer("merchant_id")
      .notNull()
      .references(() => merchants.id),
    name: text("name").notNull(),
    alias: text("alias").notNull().default(""),
    domain: text("domain").notNull().default(""),
    /** HMAC-SHA256 of the client secret under the data-protection key (base64url). */
    secretHash: text("secret_hash").notNull(),
    /**
     * The secret before the last rotation, valid beside the new one until `previous_secret_expires`
     * (docs/management.md "Rotating a client secret"); null when there is none.
     */
    previousSecretHash: text("previous_secret_hash"),
    previousSecretExpires: integer("previous_secret_expires"),
    /** When the client was disabled: it then authenticates nowhere and its tokens are refused; null while enabled. */
    disabled: integer("disabled"),
    /** AES-GCM sealed signing secret for response signing (see security/data-protection.ts). */
    signingSecretSealed: text("signing_secret_sealed"),
    /**
     * The signing secret before the last rotation: it still signs responses, and is still taken on
     * assertions, until `previous_signing_secret_expires` (docs/management.md "Managing clients").
     */
    previousSigningSecretSealed: text("previous_signing_secret_sealed"),
    previousSigningSecretExpires: integer("previous_signing_secret_expires"),
    redirectUris: text("redirect_uris", { mode: "json" })
      .$type<string[]>()
      .notNull()
      .default(sql`'[]'`),
    defaultRedirectUri: text("default_redirect_uri"),
    fields: text("fields", { mode: "json" })
      .$type<Partial<Record<string, boolean | string>>>()
      .notNull()
      .default(sql`'{}'`),
    css: text("css", { mode: "json" })
      .$type<Record<string, unknown>>()
      .notNull()
      .default(sql`'{}'`),
    termsCss: text("terms_css", { mode: "json" })
      .$type<Record<string, unknown>>()
      .notNull()
      .default(sql`'{}'`),
    grantTypes: text("grant_types", { mode: "json" })
      .$type<string[]>()
      .notNull()
      .default(sql`'[]'`),
    accessTokenLifetime: integer("access_token_lifetime").notNull().default(604800),
    autoApprove: integer("auto_approve", { mode: "boolean" }).notNull().default(false),
    enableSso: integer("enable_sso", { mode: "boolean" }).notNull().default(false),
    /** Every user signs in to this client with a second factor; the login page enrols one who has none. */
    requireSecondFactor: integer("require_second_factor", { mode: "boolean" }).notNull().default(false),
    /**
     * A client that cannot keep a secret (a native app): PKCE at /oauth/authorize, and only
     * authorization_code and refresh_token at /oauth/token, with client_id alone.
     */
    publicClient: integer("public_client", { mode: "boolean" }).notNull().default(false),
    unregisteredPayments: integer("unregistered_payments", { mode: "boolean" }).notNull().default(false),
    universalDataAccess: integer("universal_data_access", { mode: "boolean" }).notNull().default(false),
    admin: integer("admin", { mode: "boolean" }).notNull().default(false),
    ipAllowList: text("ip_allow_list", { mode: "json" })
      .$type<string[]>()
      .notNull()
      .default(sql`'[]'`),
    /** Null means the service default (DEFAULT_RATE_LIMIT in durable-objects/client-policy.ts). */
    rateLimit: text("rate_limit", { mode: "json" }).$type<RateLimitSetting>(),
    jwt: integer("jwt", { mode: "boolean" }).notNull().default(false),
    resources: text("resources", { mode: "json" })
      .$type<string[]>()
      .notNull()
      .default(sql`'[]'`),
    /**
     * Registration metadata (RFC 7591, OpenID Connect Registration), set by the import or by
     * POST /oauth/register: the client's own pages and logo, where sign-out may return to, where
     * back-channel logout tokens go, how it authenticates at the token endpoint (null:
     * client_secret_basic, or none for a public client), and the scopes it may ask for (null: all).
     */
    logoUri: text("logo_uri"),
    clientUri: text("client_uri"),
    postLogoutRedirectUris: text("post_logout_redirect_uris", { mode: "json" })
      .$type<string[]>()
      .notNull()
      .default(sql`'[]'`),
    backchannelLogoutUri: text("backchannel_logout_uri"),
    /** Where the client is told of changes to its users (docs/callbacks.md); null for no callbacks. */
    callbackUrl: text("callback_url"),
    backchannelLogoutSessionRequired: integer("backchannel_logout_session_required", { mode: "boolean" })
      .notNull()
      .default(false),
    /**
     * Whether each refresh rotates the refresh token (with reuse detection); false, for a
     * confidential client only, gives its new grants persistent refresh tokens, checked without
     * D1 (oauth/self-contained-refresh-tokens.ts).
     */
    refreshTokenRotation: integer("refresh_token_rotation", { mode: "boolean" }).notNull().default(true),
    tokenEndpointAuthMethod: text("token_endpoint_auth_method").$type<TokenEndpointAuthMethod>(),
    scope: text("scope"),
    /** HMAC-SHA256 of the RFC 7592 registration access token; null for an imported client. */
    registrationTokenHash: text("registration_token_hash"),
    /** OpenID Connect's client metadata: how its ID tokens and access tokens are signed (null: RS256, EdDSA). */
    idTokenSignedResponseAlg: text("id_token_signed_response_alg").$type<SigningAlgorithm>(),
    accessTokenSignedResponseAlg: text("access_token_signed_response_alg").$type<SigningAlgorithm>(),
    /** The /api/2 endpoints the client is granted (schemas/api-endpoints.ts); null for all of them. */
    apiEndpoints: text("api_endpoints", { mode: "json" }).$type<ApiEndpoint[]>(),
    created: integer("created").notNull().default(now),
    updated: integer("updated").notNull().default(now),
  },
  (t) => [index("clients_merchant_idx").on(t.merchantId)],
);
