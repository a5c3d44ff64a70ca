/**
 * The D1 schema for the whole service. Times are integer Unix seconds (UTC); the API renders them
 * as `YYYY-MM-DD HH:MM:SS`. Lists that are only ever read whole with their owner (redirect URIs,
 * resources, field settings) are JSON text columns; anything that is searched has its own table.
 * Every lookup, filter and sort an endpoint offers has an index here.
 */
import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import type { ApiEndpoint } from "../schemas/api-endpoints";

const now = sql`(unixepoch())`;

export const merchants = sqliteTable("merchants", {
  id: integer("id").primaryKey(),
  name: text("name").notNull(),
  created: integer("created").notNull().default(now),
  updated: integer("updated").notNull().default(now),
});

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
    /** AES-GCM sealed signing secret for response signing (see security/data-protection.ts). */
    signingSecretSealed: text("signing_secret_sealed"),
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
    /** Null means the service default (see durable-objects/rate-limiter.ts). */
    rateLimit: text("rate_limit", { mode: "json" }).$type<RateLimitSetting>(),
    jwt: integer("jwt", { mode: "boolean" }).notNull().default(false),
    resources: text("resources", { mode: "json" })
      .$type<string[]>()
      .notNull()
      .default(sql`'[]'`),
    /** The /api/2 endpoints the client is granted (schemas/api-endpoints.ts); null for all of them. */
    apiEndpoints: text("api_endpoints", { mode: "json" }).$type<ApiEndpoint[]>(),
    created: integer("created").notNull().default(now),
    updated: integer("updated").notNull().default(now),
  },
  (t) => [index("clients_merchant_idx").on(t.merchantId)],
);

/** Statuses below 0 get no token, and tokens issued before the change are refused. */
export const REFUSED_USER_STATUSES: Readonly<Record<number, string>> = {
  [-1]: "inactive",
  [-2]: "blocked",
  [-3]: "deleted",
};

export const users = sqliteTable(
  "users",
  {
    /** The numeric userId. */
    id: integer("id").primaryKey(),
    /** The legacy id (deprecated in the API, kept for old integrations). */
    legacyId: text("legacy_id"),
    uuid: text("uuid").notNull(),
    passwordHash: text("password_hash"),
    /** 1 verified, 0 unverified (both active), -1 inactive, -2 blocked, -3 deleted. */
    status: integer("status").notNull().default(0),
    email: text("email"),
    emailVerified: integer("email_verified"),
    phoneNumber: text("phone_number"),
    phoneNumberVerified: integer("phone_number_verified"),
    givenName: text("given_name"),
    familyName: text("family_name"),
    formattedName: text("formatted_name"),
    displayName: text("display_name"),
    preferredUsername: text("preferred_username"),
    url: text("url"),
    photo: text("photo"),
    gender: text("gender").notNull().default("undisclosed"),
    birthday: text("birthday").notNull().default("0000-00-00"),
    locale: text("locale"),
    utcOffset: text("utc_offset"),
    verified: integer("verified"),
    tracking: integer("tracking", { mode: "boolean" }).notNull().default(false),
    published: integer("published").notNull().default(now),
    updated: integer("updated").notNull().default(now),
    lastLoggedIn: integer("last_logged_in"),
    lastAuthenticated: integer("last_authenticated"),
    imported: integer("imported"),
    migrated: integer("migrated"),
    /** Names as `GET /api/2/users` matches them: folded by db/search-key.ts, kept with the names by the import. */
    familyNameKey: text("family_name_key"),
    givenNameKey: text("given_name_key"),
    displayNameKey: text("display_name_key"),
    preferredUsernameKey: text("preferred_username_key"),
  },
  (t) => [
    uniqueIndex("users_uuid_idx").on(t.uuid),
    uniqueIndex("users_legacy_id_idx").on(t.legacyId),
    index("users_email_idx").on(t.email),
    index("users_phone_number_idx").on(t.phoneNumber),
    index("users_family_name_key_idx").on(t.familyNameKey),
    index("users_given_name_key_idx").on(t.givenNameKey),
    index("users_display_name_key_idx").on(t.displayNameKey),
    index("users_preferred_username_key_idx").on(t.preferredUsernameKey),
  ],
);

export const userEmails = sqliteTable(
  "user_emails",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** Stored lower-cased: an address belongs to one user across the whole service. */
    value: text("value").notNull(),
    type: text("type").notNull().default("other"),
    primary: integer("is_primary", { mode: "boolean" }).notNull().default(false),
    verified: integer("verified", { mode: "boolean" }).notNull().default(false),
  },
  (t) => [uniqueIndex("user_emails_value_idx").on(t.value), index("user_emails_user_idx").on(t.userId)],
);

export const userPhoneNumbers = sqliteTable(
  "user_phone_numbers",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    value: text("value").notNull(),
    type: text("type").notNull().default("mobile"),
    primary: integer("is_primary", { mode: "boolean" }).notNull().default(false),
    verified: integer("verified", { mode: "boolean" }).notNull().default(false),
  },
  (t) => [index("user_phone_numbers_user_idx").on(t.userId), index("user_phone_numbers_value_idx").on(t.value)],
);

/** Address rows of this type make up the User's `currentLocation` rather than `addresses`. */
export const CURRENT_LOCATION = "current";

export const userAddresses = sqliteTable(
  "user_addresses",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** home, delivery, invoice, ... or CURRENT_LOCATION. */
    type: text("type").notNull(),
    formatted: text("formatted"),
    streetAddress: text("street_address"),
    postalCode: text("postal_code"),
    locality: text("locality"),
    region: text("region"),
    country: text("country"),
  },
  (t) => [index("user_addresses_user_idx").on(t.userId, t.type)],
);

export const userAccounts = sqliteTable(
  "user_accounts",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    domain: text("domain").notNull(),
    accountUserId: text("account_user_id"),
    username: text("username"),
  },
  (t) => [index("user_accounts_user_idx").on(t.userId)],
);

/**
 * Which users a client may see: a user is visible to a client once connected to it. Each row
 * carries a copy of its user's status, published and updated, so that a page of a client's (or
 * a merchant's) users in any of those orders is one index range per status. Triggers of
 * migration 0003 keep the copies equal to the user's, whoever writes either table. drizzle-kit
 * does not know them: a migration that rebuilds either table must create them again (the test
 * "follows a user's status changes" in test/users.test.ts fails when they are gone).
 */
export const userClients = sqliteTable(
  "user_clients",
  {
    clientId: text("client_id")
      .notNull()
      .references(() => clients.id, { onDelete: "cascade" }),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** Copied from the client so the `merchant` filter is one indexed range. */
    merchantId: integer("merchant_id").notNull(),
    created: integer("created").notNull().default(now),
    status: integer("status").notNull().default(0),
    published: integer("published").notNull().default(0),
    updated: integer("updated").notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.clientId, t.userId] }),
    index("user_clients_user_idx").on(t.userId),
    index("user_clients_merchant_idx").on(t.merchantId, t.userId),
    index("user_clients_client_status_user_idx").on(t.clientId, t.status, t.userId),
    index("user_clients_client_status_published_idx").on(t.clientId, t.status, t.published, t.userId),
    index("user_clients_client_status_updated_idx").on(t.clientId, t.status, t.updated, t.userId),
    index("user_clients_merchant_status_user_idx").on(t.merchantId, t.status, t.userId),
    index("user_clients_merchant_status_published_idx").on(t.merchantId, t.status, t.published, t.userId),
    index("user_clients_merchant_status_updated_idx").on(t.merchantId, t.status, t.updated, t.userId),
  ],
);

export const products = sqliteTable(
  "products",
  {
    id: integer("id").primaryKey(),
    parentProductId: integer("parent_product_id"),
    clientId: text("client_id")
      .notNull()
      .references(() => clients.id),
    /** 1 product, 2 subscription, 3 digital content. */
    type: integer("type").notNull().default(1),
    /** 0 not a bundle, 1 dynamic bundle, 2 one-time bundle. */
    bundle: integer("bundle").notNull().default(0),
    code: text("code"),
    name: text("name").notNull(),
    description: text("description"),
    url: text("url"),
    /** Minor currency units (øre, cents). */
    price: integer("price").notNull().default(0),
    vat: integer("vat").notNull().default(0),
    currency: text("currency").notNull(),
    paymentOptions: integer("payment_options").notNull().default(2),
    quantityLimit: integer("quantity_limit"),
    quantityCount: integer("quantity_count").notNull().default(0),
    saleStart: integer("sale_start"),
    saleStop: integer("sale_stop"),
    availableStart: integer("available_start"),
    availableStop: integer("available_stop"),
    subscriptionPeriod: integer("subscription_period"),
    subscriptionRenewPrice: integer("subscription_renew_price"),
    subscriptionRenewPeriod: integer("subscription_renew_period"),
    subscriptionAutoRenew: integer("subscription_auto_renew", { mode: "boolean" }).notNull().default(false),
    subscriptionAutoRenewLockPeriod: integer("subscription_auto_renew_lock_period"),
    subscriptionAutoRenewDisabled: integer("subscription_auto_renew_disabled", { mode: "boolean" })
      .notNull()
      .default(false),
    subscriptionGracePeriod: integer("subscription_grace_period"),
    subscriptionEmailReceiptLimit: integer("subscription_email_receipt_limit"),
    subscriptionFinalEndDate: integer("subscription_final_end_date"),
    allowMultiSales: integer("allow_multi_sales", { mode: "boolean" }).notNull().default(false),
    /** -1 deleted, 0 not available, 1 invisible, 2 unselectable, 3 available. */
    status: integer("status").notNull().default(0),
    purchaseUri: text("purchase_uri"),
    changedBy: integer("changed_by"),
    changed: integer("changed").notNull().default(now),
    createdBy: integer("created_by"),
    created: integer("created").notNull().default(now),
  },
  (t) => [
    /** The client's products in id order: the default sort. */
    index("products_client_idx").on(t.clientId),
    index("products_client_status_idx").on(t.clientId, t.status),
    index("products_client_type_idx").on(t.clientId, t.type),
    index("products_client_changed_idx").on(t.clientId, t.changed),
    index("products_client_created_idx").on(t.clientId, t.created),
    index("products_client_parent_idx").on(t.clientId, t.parentProductId),
    index("products_client_code_idx").on(t.clientId, t.code),
    index("products_client_name_idx").on(t.clientId, t.name),
    index("products_client_price_idx").on(t.clientId, t.price),
  ],
);

export const digitalContents = sqliteTable(
  "digital_contents",
  {
    id: integer("id").primaryKey(),
    productId: integer("product_id")
      .notNull()
      .references(() => products.id),
    parentProductId: integer("parent_product_id"),
    clientId: text("client_id")
      .notNull()
      .references(() => clients.id),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id),
    orderId: integer("order_id"),
    /** 1 active, 0 expired, -1 deleted, -2 blocked. */
    status: integer("status").notNull().default(1),
    count: integer("count").notNull().default(1),
    bundleId: integer("bundle_id"),
    statusMsg: text("status_msg"),
    created: integer("created").notNull().default(now),
    updated: integer("updated").notNull().default(now),
  },
  (t) => [
    /** The client's digital contents in id order: the default sort. */
    index("digital_contents_client_idx").on(t.clientId),
    index("digital_contents_client_user_idx").on(t.clientId, t.userId),
    index("digital_contents_client_product_idx").on(t.clientId, t.productId),
    index("digital_contents_client_parent_idx").on(t.clientId, t.parentProductId),
    index("digital_contents_client_status_idx").on(t.clientId, t.status),
    index("digital_contents_client_updated_idx").on(t.clientId, t.updated),
    index("digital_contents_client_created_idx").on(t.clientId, t.created),
  ],
);

export const mails = sqliteTable(
  "mails",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    /** Null for a mail to an address no user has yet (a sign-in link); set when one signs in with it. */
    userId: integer("user_id").references(() => users.id, { onDelete: "cascade" }),
    template: text("template").notNull(),
    senderName: text("sender_name"),
    senderEmail: text("sender_email").notNull(),
    userName: text("user_name"),
    userEmail: text("user_email").notNull(),
    created: integer("created").notNull(),
    /** The e-mail token; unique, so re-importing a mail updates it. */
    token: text("token").notNull(),
  },
  (t) => [
    uniqueIndex("mails_token_idx").on(t.token),
    index("mails_user_created_idx").on(t.userId, t.created),
    index("mails_unowned_email_idx")
      .on(t.userEmail)
      .where(sql`${t.userId} IS NULL`),
  ],
);

/**
 * The one live sign-in link per user (POST /api/2/signin, the login page's "e-mail me a link"):
 * its token's keyed hash. A new link replaces the row; using a link deletes it, in one statement,
 * so a link works once and a replaced one never, whatever KV (which holds the link's details)
 * still shows.
 */
export const signinRequests = sqliteTable("signin_requests", {
  /**
   * Whom the link signs in: `user:<id>` for an address that has a user, whichever of its addresses
   * the link went to; `email:<address>` (as looked up) for one that has none.
   */
  subject: text("subject").primaryKey(),
  tokenHash: text("token_hash").notNull(),
  created: integer("created").notNull(),
  expires: integer("expires").notNull(),
});

export const mailEvents = sqliteTable(
  "mail_events",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    mailId: integer("mail_id")
      .notNull()
      .references(() => mails.id, { onDelete: "cascade" }),
    event: text("event").notNull(),
    timestamp: integer("timestamp").notNull(),
  },
  (t) => [index("mail_events_mail_idx").on(t.mailId, t.timestamp)],
);

export const deviceFingerprints = sqliteTable(
  "device_fingerprints",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    /** SHA-256 of device id, unified platform name and application name. */
    hash: text("hash").notNull(),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    clientId: text("client_id")
      .notNull()
      .references(() => clients.id, { onDelete: "cascade" }),
    platform: text("platform").notNull(),
    applicationName: text("application_name").notNull(),
    applicationVersion: text("application_version"),
    created: integer("created").notNull().default(now),
  },
  (t) => [
    uniqueIndex("device_fingerprints_user_hash_idx").on(t.userId, t.hash),
    index("device_fingerprints_client_idx").on(t.clientId),
  ],
);

export const refreshTokens = sqliteTable(
  "refresh_tokens",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    /** HMAC-SHA256 of the opaque token under the data-protection key; the token itself is never stored. */
    tokenHash: text("token_hash").notNull(),
    clientId: text("client_id")
      .notNull()
      .references(() => clients.id, { onDelete: "cascade" }),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    scope: text("scope").notNull().default(""),
    /** Every token rotated from one grant shares its family; reuse of a rotated one revokes them all. */
    family: text("family").notNull().default(""),
    created: integer("created").notNull().default(now),
    expires: integer("expires").notNull(),
    revoked: integer("revoked"),
  },
  (t) => [
    uniqueIndex("refresh_tokens_hash_idx").on(t.tokenHash),
    index("refresh_tokens_family_idx").on(t.family),
    index("refresh_tokens_user_client_idx").on(t.userId, t.clientId),
    index("refresh_tokens_client_idx").on(t.clientId),
    index("refresh_tokens_expires_idx").on(t.expires),
  ],
);

/**
 * Browser sessions (the single sign-on of the browser flows): the cookie carries a random id and
 * its signature; only the id's keyed hash is stored, so a leaked table opens no session.
 * Revocable server-side (`revoked`), and ended at `expires` whatever the cookie says.
 */
export const sessions = sqliteTable(
  "sessions",
  {
    idHash: text("id_hash").primaryKey(),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** The client the session was started through. */
    clientId: text("client_id").references(() => clients.id, { onDelete: "set null" }),
    created: integer("created").notNull(),
    expires: integer("expires").notNull(),
    revoked: integer("revoked"),
  },
  (t) => [index("sessions_user_idx").on(t.userId)],
);

/** The secrets whose fingerprints key_fingerprints keeps. */
export type FingerprintedSecret = "DATA_PROTECTION_KEY";

/**
 * Fingerprints of the secrets the stored data depends on (security/data-protection.ts
 * keyFingerprint), by secret name: today only DATA_PROTECTION_KEY, under which client secrets and
 * refresh tokens are hashed and signing secrets sealed. The first import records it; an import
 * under another key is refused whole (migration 0011's trigger forbids changing it), and a Worker
 * under another key reports itself misconfigured (src/configuration.ts). Deleting the row is the
 * deliberate way to move a database to another key.
 */
export const keyFingerprints = sqliteTable("key_fingerprints", {
  name: text("name").$type<FingerprintedSecret>().primaryKey(),
  fingerprint: text("fingerprint").notNull(),
  created: integer("created").notNull().default(now),
});
