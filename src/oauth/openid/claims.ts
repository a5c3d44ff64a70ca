/**
 * OpenID Connect's scopes and the standard claims (Core §5.1, §5.4) each one releases, from the
 * spec's User object: portable contacts mapped to their OpenID names, as SPiD's /oauth/userinfo
 * did, with SPiD's `legacy_user_id` (the numeric userId) beside `sub` (the user's uuid, which
 * never changes and names no merchant). A claim the user has no value for is left out, never null.
 */
import type { UserRecord } from "../../db/queries/users";
import type { UserProfile } from "../../db/queries/users";
import { CURRENT_LOCATION } from "../../db/schema";
import { type Scope, SUPPORTED_SCOPES } from "./scopes";

const SCOPE_CLAIMS = {
  openid: ["sub", "legacy_user_id"],
  profile: [
    "name",
    "given_name",
    "family_name",
    "preferred_username",
    "picture",
    "website",
    "gender",
    "birthdate",
    "locale",
    "updated_at",
  ],
  email: ["email", "email_verified"],
  phone: ["phone_number", "phone_number_verified"],
  address: ["address"],
} as const satisfies Partial<Record<Scope, readonly string[]>>;

export type ClaimName = (typeof SCOPE_CLAIMS)[keyof typeof SCOPE_CLAIMS][number];

/** What the discovery document lists: these, and the ID token's own claims. */
export const USER_CLAIMS: readonly ClaimName[] = Object.values(SCOPE_CLAIMS).flat();
export const ID_TOKEN_CLAIMS = [
  "iss",
  "aud",
  "exp",
  "iat",
  "auth_time",
  "nonce",
  "acr",
  "amr",
  "azp",
  "at_hash",
  "sid",
];

/**
 * The scope values of a `scope` parameter (RFC 6749 §3.3: space-separated, order and repeats
 * meaningless), or the first unsupported one. An absent or empty parameter is no scope.
 */
export function parseScope(value: string | undefined): { scopes: Scope[] } | { unsupported: string } {
  const values = new Set((value ?? "").split(" ").filter((v) => v !== ""));
  const unsupported = [...values].find((v) => !(SUPPORTED_SCOPES as readonly string[]).includes(v));
  if (unsupported !== undefined) return { unsupported };
  return { scopes: SUPPORTED_SCOPES.filter((scope) => values.has(scope)) };
}

/** Whether a client registered with `clientScope` (null: every scope) may ask for `scopes`. */
export function allowedScopes(clientScope: string | null, scopes: readonly Scope[]): boolean {
  if (clientScope === null) return true;
  const allowed = clientScope.split(" ");
  return scopes.every((scope) => allowed.includes(scope));
}

/** The claims `scopes` release, with `extra` (a `claims` request's names) where ours. */
export function releasedClaims(scopes: readonly string[], extra: readonly string[] = []): Set<ClaimName> {
  const names = new Set<ClaimName>();
  for (const scope of scopes) {
    for (const name of SCOPE_CLAIMS[scope as keyof typeof SCOPE_CLAIMS] ?? []) names.add(name);
  }
  for (const name of extra) if ((USER_CLAIMS as readonly string[]).includes(name)) names.add(name as ClaimName);
  return names;
}

/** The OpenID Connect subject of a user: its uuid (see the module comment). */
export function subjectOf(user: Pick<UserRecord, "uuid">): string {
  return user.uuid;
}

/** The user's values of the claims `names`, those it has. */
export function userClaims(profile: UserProfile, names: ReadonlySet<ClaimName>): Record<string, unknown> {
  const values = claimValues(profile);
  const claims: Record<string, unknown> = {};
  for (const name of names) {
    const value = values[name]();
    if (value !== null && value !== undefined) claims[name] = value;
  }
  return claims;
}

/** Each claim's value, computed only when asked for. */
function claimValues({ user, addresses }: UserProfile): Record<ClaimName, () => unknown> {
  return {
    sub: () => subjectOf(user),
    legacy_user_id: () => String(user.id),
    name: () => user.formattedName ?? ([user.givenName, user.familyName].filter(Boolean).join(" ") || user.displayName),
    given_name: () => user.givenName,
    family_name: () => user.familyName,
    preferred_username: () => user.preferredUsername,
    picture: () => user.photo,
    website: () => user.url,
    // OpenID's values are female and male, and others where neither applies; the spec's
    // "undisclosed" and "withheld" say nothing, so they are no claim.
    gender: () => (["female", "male", "other"].includes(user.gender) ? user.gender : null),
    // 0000-MM-DD is OpenID's spelling of a birthday without a year; the spec's 0000-00-00 is none.
    birthdate: () => (user.birthday === "0000-00-00" ? null : user.birthday),
    // BCP 47, as OpenID asks: nb_NO is nb-NO.
    locale: () => user.locale?.replace("_", "-"),
    updated_at: () => user.updated,
    email: () => user.email,
    email_verified: () => (user.email === null ? null : user.emailVerified !== null),
    phone_number: () => user.phoneNumber,
    phone_number_verified: () => (user.phoneNumber === null ? null : user.phoneNumberVerified !== null),
    address: () => {
      const named = addresses.filter((a) => a.type !== CURRENT_LOCATION);
      const address = named.find((a) => a.type === "home") ?? named[0];
      if (!address) return null;
      const members = {
        formatted: address.formatted,
        street_address: address.streetAddress,
        locality: address.locality,
        region: address.region,
        postal_code: address.postalCode,
        country: address.country,
      };
      return Object.fromEntries(Object.entries(members).filter(([, value]) => value !== null));
    },
  };
}
