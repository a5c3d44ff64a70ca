/** Users, the parts of a user that have rows of their own, and which clients see which users. */
import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { clients } from "./merchants-and-clients";
import { now } from "./now";

/** Statuses below 0 get no token, and tokens issued before the change are refused. */
export const REFUSED_USER_STATUSES: Readonly<Record<number, string>> = {
  [-1]: "inactive",
  [-2]: "blocked",
  [-3]: "deleted",
};

/** A flag as SQLite's json_object writes it. */
type StoredFlag = 0 | 1;

/** `users.parts` as the triggers write it: each part's rows in their order, flags as 0 or 1. */
export type StoredUserParts = {
  emails: { id: number; value: string; type: string; primary: StoredFlag; verified: StoredFlag }[];
  phoneNumbers: { id: number; value: string; type: string; primary: StoredFlag; verified: StoredFlag }[];
  addresses: {
    id: number;
    type: string;
    formatted: string | null;
    streetAddress: string | null;
    postalCode: string | null;
    locality: string | null;
    region: string | null;
    country: string | null;
  }[];
  accounts: { id: number; domain: string; accountUserId: string | null; username: string | null }[];
  connections: { clientId: string; merchantId: number }[];
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
    /**
     * A copy of the user's e-mail addresses, phone numbers, addresses, accounts and connections,
     * kept by triggers of those tables (migration 0031), so that a User object is one row read.
     * Null for a user not yet copied since the migration (the retention job copies them).
     */
    parts: text("parts", { mode: "json" }).$type<StoredUserParts>(),
    /**
     * A random value that triggers (migration 0034) change whenever the row changes, the copy of
     * its parts included: an isolate's copy of the user with the same version is current
     * (db/cached-reads.ts `readUserSearch`). 0 on a row unchanged since the migration; a new row
     * has one already, as its insert writes the copy of its parts.
     */
    version: integer("version").notNull().default(0),
  },
  (t) => [
    uniqueIndex("users_uuid_idx").on(t.uuid),
    // Shrinks to nothing once every user's parts are copied.
    index("users_parts_missing_idx")
      .on(t.id)
      .where(sql`${t.parts} IS NULL`),
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

/**
 * A phone number change waiting for the code texted to the number (docs/management.md "Changing a
 * phone number"): one per user, the newest change's. The code is stored only as its keyed hash;
 * wrong codes count in `attempts`, and a spent, expired or exhausted row confirms nothing.
 */
export const phoneVerifications = sqliteTable(
  "phone_verifications",
  {
    userId: integer("user_id")
      .primaryKey()
      .references(() => users.id, { onDelete: "cascade" }),
    /** The client that asked for the change, and its merchant. */
    clientId: text("client_id").notNull(),
    merchantId: integer("merchant_id").notNull(),
    phoneNumber: text("phone_number").notNull(),
    codeHash: text("code_hash").notNull(),
    attempts: integer("attempts").notNull().default(0),
    created: integer("created").notNull(),
    expires: integer("expires").notNull(),
  },
  (t) => [
    index("phone_verifications_expires_idx").on(t.expires),
    index("phone_verifications_number_idx").on(t.merchantId, t.phoneNumber, t.created),
  ],
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
