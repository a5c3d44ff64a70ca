/**
 * Writing a user's profile through the API (api/manage/user.ts): only the fields sent change; an
 * address type sent replaces that type's address, or removes it when null. Each returns
 * statements for the caller's one batch.
 */
import { and, eq, type SQL } from "drizzle-orm";
import type { AddressFields, ProfileFields } from "../../schemas/user-profile";
import { USER_STATUS } from "../../schemas/value-sets";
import type { Database } from "../client";
import { searchKeyOrNull } from "../search-key";
import { userAddresses, userClients, userEmails, users } from "../schema";
import { newUserId } from "./users";

/** The users columns the sent fields set, the search keys of the names with them. */
function columnsOf(update: ProfileFields): Partial<typeof users.$inferInsert> {
  const columns: Partial<typeof users.$inferInsert> = {};
  const set = <K extends keyof typeof columns>(key: K, value: (typeof columns)[K] | undefined) => {
    if (value !== undefined) columns[key] = value;
  };
  set("displayName", update.displayName);
  set("preferredUsername", update.preferredUsername);
  set("url", update.url);
  set("photo", update.photo);
  set("gender", update.gender);
  set("birthday", update.birthday);
  set("locale", update.locale);
  set("utcOffset", update.utcOffset);
  set("givenName", update.name?.givenName);
  set("familyName", update.name?.familyName);
  set("formattedName", update.name?.formatted);
  if (columns.displayName !== undefined) columns.displayNameKey = searchKeyOrNull(columns.displayName);
  if (columns.preferredUsername !== undefined) {
    columns.preferredUsernameKey = searchKeyOrNull(columns.preferredUsername);
  }
  if (columns.givenName !== undefined) columns.givenNameKey = searchKeyOrNull(columns.givenName);
  if (columns.familyName !== undefined) columns.familyNameKey = searchKeyOrNull(columns.familyName);
  return columns;
}

/** The names of the fields a change sets (`addresses.home` per address type), for the audit trail. */
export function changedFields(update: ProfileFields): string[] {
  return Object.entries(update).flatMap(([field, value]) => {
    if (value === undefined) return [];
    if (field === "name" || field === "addresses") {
      return Object.keys(value as object).map((part) => `${field}.${part}`);
    }
    return [field];
  });
}

function addressRow(userId: number | SQL<number>, type: string, address: AddressFields) {
  return {
    userId,
    type,
    formatted: address.formatted ?? null,
    streetAddress: address.streetAddress ?? null,
    postalCode: address.postalCode ?? null,
    locality: address.locality ?? null,
    region: address.region ?? null,
    country: address.country ?? null,
  };
}

export function updateUserProfile(db: Database, userId: number, update: ProfileFields, now: number) {
  return [
    db
      .update(users)
      .set({ ...columnsOf(update), updated: now })
      .where(eq(users.id, userId)),
    ...Object.entries(update.addresses ?? {}).flatMap(([type, address]) => [
      db.delete(userAddresses).where(and(eq(userAddresses.userId, userId), eq(userAddresses.type, type))),
      ...(address === null ? [] : [db.insert(userAddresses).values(addressRow(userId, type, address))]),
    ]),
  ];
}

/**
 * A new user (status 0, unverified) with `email` as its primary address, unverified, connected
 * to the client; later statements name it by its uuid, the first returns its id.
 */
export function insertUser(
  db: Database,
  user: {
    uuid: string;
    email: string;
    profile: ProfileFields;
    client: { id: string; merchantId: number };
    now: number;
  },
) {
  const { uuid, email, profile, client, now } = user;
  const userId = newUserId(uuid);
  return [
    db
      .insert(users)
      .values({ uuid, status: USER_STATUS.unverified, email, published: now, updated: now, ...columnsOf(profile) })
      .returning({ id: users.id }),
    db.insert(userEmails).values({ userId, value: email, primary: true, verified: false }),
    ...Object.entries(profile.addresses ?? {}).flatMap(([type, address]) =>
      address === null ? [] : [db.insert(userAddresses).values(addressRow(userId, type, address))],
    ),
    db.insert(userClients).values({ clientId: client.id, userId, merchantId: client.merchantId }),
  ] as const;
}
