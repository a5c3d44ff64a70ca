import { eq, inArray } from "drizzle-orm";
import type { Database } from "../client";
import { clients } from "../schema";

export type ClientRecord = typeof clients.$inferSelect;

export async function findClient(db: Database, id: string): Promise<ClientRecord | undefined> {
  return db.select().from(clients).where(eq(clients.id, id)).get();
}

export async function listMerchantClients(db: Database, merchantId: number): Promise<ClientRecord[]> {
  return db.select().from(clients).where(eq(clients.merchantId, merchantId)).orderBy(clients.id).all();
}

/** What the rate limiter checks for a client on every API call. */
export async function findClientPolicy(db: Database, id: string) {
  return db
    .select({
      merchantId: clients.merchantId,
      rateLimit: clients.rateLimit,
      ipAllowList: clients.ipAllowList,
      apiEndpoints: clients.apiEndpoints,
    })
    .from(clients)
    .where(eq(clients.id, id))
    .get();
}

/** The named clients' merchants and admin flags, for deciding who may read whose data. */
export async function findClientRights(db: Database, ids: string[]) {
  return db
    .select({ id: clients.id, merchantId: clients.merchantId, admin: clients.admin })
    .from(clients)
    .where(inArray(clients.id, ids))
    .all();
}

/** The client's sealed signing secret (security/data-protection.ts), null when it has none. */
export async function findClientSigningSecret(db: Database, id: string): Promise<string | null> {
  const row = await db.select({ sealed: clients.signingSecretSealed }).from(clients).where(eq(clients.id, id)).get();
  return row?.sealed ?? null;
}
