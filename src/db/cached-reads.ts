/**
 * API reads that an isolate answers from memory for up to API_READ_CACHE_TTL_MS: the hottest
 * reads whose rows change only by import or sign-in. A read without `x-d1-bookmark` may come from
 * any replica, however far behind; this is one more replica, the nearest, at most that much older
 * than what it read. A caller that sends a bookmark (`fresh`) is always read from D1 (docs/edge.md
 * "Reads and replicas"). Each read takes the request's database opener and opens it only on a miss.
 */
import type { Database } from "./client";
import { IsolateCache } from "./isolate-cache";
import { type ClientRecord, listMerchantClients } from "./queries/clients";
import { findUserProfiles, type UserProfile } from "./queries/users";
import { RESERVED_PARAMETERS } from "../http/reserved-parameters";

export const API_READ_CACHE_TTL_MS = 5_000;

const merchantClients = new IsolateCache<ClientRecord[]>(API_READ_CACHE_TTL_MS);
const userProfiles = new IsolateCache<UserProfile>(API_READ_CACHE_TTL_MS);
const userSearches = new IsolateCache<UserSearchResult>(API_READ_CACHE_TTL_MS);

/** A page of a user search: its users' ids in order, and what a bounded scan examined (`meta`). */
export type UserSearchResult = { userIds: number[]; scan: { scanned?: number; scanComplete?: boolean } };

export function readMerchantClients(db: () => Database, merchantId: number, fresh: boolean) {
  return merchantClients.read(String(merchantId), () => listMerchantClients(db(), merchantId), fresh);
}

/** The user and all of their parts; undefined (never cached) when there is no such user. */
export async function readUserProfile(db: () => Database, userId: number, fresh: boolean) {
  return (await readUserProfiles(db, [userId], fresh))[0];
}

/**
 * The users and all of their parts, in the order asked for; unknown ids are left out (and never
 * cached). `loaded` holds those this request has read already (with the page that named them);
 * the others not cached are loaded together, in one round trip.
 */
export async function readUserProfiles(
  db: () => Database,
  userIds: number[],
  fresh: boolean,
  loaded = new Map<number, UserProfile>(),
): Promise<UserProfile[]> {
  for (const [id, profile] of loaded) userProfiles.set(String(id), profile);
  const cached = userIds.map((id) => loaded.get(id) ?? (fresh ? undefined : userProfiles.get(String(id))));
  const missing = userIds.filter((_, i) => cached[i] === undefined);
  if (missing.length > 0) {
    for (const profile of await findUserProfiles(db(), missing)) loaded.set(profile.user.id, profile);
    // A user D1 no longer has is forgotten too.
    for (const id of missing) userProfiles.set(String(id), loaded.get(id));
  }
  return userIds.flatMap((id, i) => cached[i] ?? loaded.get(id) ?? []);
}

/**
 * A user search's page for `scope` (the client read, the caller's merchant) and the request's
 * query; `search` runs it against D1. A read from D1 with a bookmark is given the isolate's copies
 * of the users of the same search's last page (heldCopies), to reuse those whose versions are
 * still their users'. The key leaves out how the page is delivered, so a token sent as
 * `oauth_token` is never kept as a key.
 */
export function readUserSearch(
  scope: { clientId: string; merchantId: number },
  url: URL,
  search: (held: Map<number, UserProfile>) => Promise<UserSearchResult>,
  fresh: boolean,
) {
  const query = new URLSearchParams(url.search);
  for (const name of RESERVED_PARAMETERS) query.delete(name);
  const key = `${scope.clientId} ${scope.merchantId} ${query}`;
  // Without a bookmark the page itself comes from the cache while it lasts, and no copy is checked.
  return userSearches.read(key, () => search(fresh ? heldCopies(key) : new Map()), fresh);
}

/**
 * The isolate's copies of the users of the search's last page, by id: none unless they are at
 * least half of it, as a page checked against few copies would read most of its users again by
 * key, a second round trip where reading the page with its users' rows is one.
 */
function heldCopies(key: string): Map<number, UserProfile> {
  const last = userSearches.get(key)?.userIds ?? [];
  const held = new Map<number, UserProfile>();
  for (const id of last) {
    const profile = userProfiles.get(String(id));
    if (profile) held.set(id, profile);
  }
  return held.size * 2 >= last.length ? held : new Map();
}
