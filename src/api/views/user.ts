/**
 * The spec's User object. Absent text is null, absent datetimes are false (as the spec has for
 * `verified`, `lastLoggedIn` and `lastAuthenticated`), gender and birthday have the spec's
 * defaults, and empty address collections are empty arrays.
 */
import type { UserProfile } from "../../db/queries/users";
import { CURRENT_LOCATION } from "../../db/schema";
import { datetimeOrFalse, formatDatetime } from "../../http/datetime";
import { type GENDERS, LIMITED_USER_FIELDS, type User } from "../../schemas/responses/user";

export function userView({ user, emails, phoneNumbers, addresses, accounts, connections }: UserProfile): User {
  const deleted = user.status === -3;
  const named = addresses.filter((a) => a.type !== CURRENT_LOCATION);
  return {
    id: user.legacyId,
    userId: String(user.id),
    uuid: user.uuid,
    name: { familyName: user.familyName, givenName: user.givenName, formatted: user.formattedName },
    displayName: user.displayName,
    published: deleted ? false : formatDatetime(user.published),
    updated: formatDatetime(user.updated),
    status: user.status,
    email: user.email,
    emailVerified: datetimeOrFalse(user.emailVerified),
    emails: emails.map((e) => ({ value: e.value, type: e.type, primary: e.primary, verified: e.verified })),
    phoneNumber: user.phoneNumber,
    phoneNumberVerified: datetimeOrFalse(user.phoneNumberVerified),
    phoneNumbers: phoneNumbers.map((p) => ({ value: p.value, type: p.type, primary: p.primary, verified: p.verified })),
    verified: datetimeOrFalse(user.verified),
    url: user.url,
    photo: user.photo,
    preferredUsername: user.preferredUsername,
    // The import lets only these values in.
    gender: user.gender as (typeof GENDERS)[number],
    birthday: user.birthday,
    locale: user.locale,
    utcOffset: user.utcOffset,
    lastLoggedIn: datetimeOrFalse(user.lastLoggedIn),
    lastAuthenticated: datetimeOrFalse(user.lastAuthenticated),
    imported: datetimeOrFalse(user.imported),
    migrated: datetimeOrFalse(user.migrated),
    addresses: named.length === 0 ? [] : Object.fromEntries(named.map((a) => [a.type, addressView(a)])),
    accounts: accounts.map((a) => ({ domain: a.domain, userId: a.accountUserId, username: a.username })),
    merchants: [...new Set(connections.map((c) => c.merchantId))],
    currentLocation: addresses.filter((a) => a.type === CURRENT_LOCATION).map(addressView),
    tracking: user.tracking,
  };
}

function addressView(a: UserProfile["addresses"][number]) {
  return {
    type: a.type,
    formatted: a.formatted,
    streetAddress: a.streetAddress,
    postalCode: a.postalCode,
    locality: a.locality,
    region: a.region,
    country: a.country,
  };
}

export function limitedUserView(profile: UserProfile) {
  const full = userView(profile);
  return Object.fromEntries(LIMITED_USER_FIELDS.map((field) => [field, full[field]]));
}

/**
 * A profile's views as JSON text, made once per profile object: a page of profiles from the
 * isolate's read cache (db/cached-reads.ts) neither renders nor serializes them again.
 */
const viewTexts = new WeakMap<UserProfile, { full?: string; limited?: string }>();

export function userViewJson(profile: UserProfile, limited: boolean): string {
  let texts = viewTexts.get(profile);
  if (!texts) viewTexts.set(profile, (texts = {}));
  return limited
    ? (texts.limited ??= JSON.stringify(limitedUserView(profile)))
    : (texts.full ??= JSON.stringify(userView(profile)));
}
