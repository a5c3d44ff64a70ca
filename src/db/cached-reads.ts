/**
 * API reads that an isolate answers from memory for up to API_READ_CACHE_TTL_MS: the hottest
 * reads whose rows change only by import or sign-in. A read without `x-d1-bookmark` may come from
 * any replica, however far behind; this is one more replica, the nearest, at most that much older
 * than what it read. A caller that sends a bookmark (`fresh`) is always read from D1 (README
 * "Reads and replicas").
 */
import type { Database } from "./client";
import { IsolateCache } from "./isolate-cache";
import { type ClientRecord, listMerchantClients } from "./queries/clients";
import { findUserProfile, type UserProfile } from "./queries/users";

export const API_READ_CACHE_TTL_MS = 5_000;

const merchantClients = new IsolateCache<ClientRecord[]>(API_READ_CACHE_TTL_MS);
const userProfiles = new IsolateCache<UserProfile>(API_READ_CACHE_TTL_MS);

export async function readMerchantClients(db: Database, merchantId: number, fresh: boolean) {
  return (await merchantClients.read(String(merchantId), () => listMerchantClients(db, merchantId), fresh)) ?? [];
}

/** The user and all of their parts; undefined (never cached) when there is no such user. */
export function readUserProfile(db: Database, userId: number, fresh: boolean) {
  return userProfiles.read(String(userId), () => findUserProfile(db, userId), fresh);
}
