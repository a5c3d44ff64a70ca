import { and, eq, inArray, isNull, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import type { Database } from "../client";
import { clients, digitalContents, merchants, products } from "../schema";

export type ClientRecord = typeof clients.$inferSelect;

/** The client, unless it is disabled: a disabled client is unknown to every flow (docs/management.md). */
export async function findClient(db: Database, id: string): Promise<ClientRecord | undefined> {
  return db
    .select()
    .from(clients)
    .where(and(eq(clients.id, id), isNull(clients.disabled)))
    .get();
}

/** The client, disabled or not: for managing it. */
export async function findClientRecord(db: Database, id: string): Promise<ClientRecord | undefined> {
  return db.select().from(clients).where(eq(clients.id, id)).get();
}

export async function listMerchantClients(db: Database, merchantId: number): Promise<ClientRecord[]> {
  return db.select().from(clients).where(eq(clients.merchantId, merchantId)).orderBy(clients.id).all();
}

/** What the rate limiter checks for a client on every API call; none for a disabled client. */
export async function findClientPolicy(db: Database, id: string) {
  return db
    .select({
      merchantId: clients.merchantId,
      rateLimit: clients.rateLimit,
      ipAllowList: clients.ipAllowList,
      apiEndpoints: clients.apiEndpoints,
    })
    .from(clients)
    .where(and(eq(clients.id, id), isNull(clients.disabled)))
    .get();
}

/** The named clients' merchants and rights (admin, operator), for deciding who may read or change whose data. */
export async function findClientRights(db: Database, ids: string[]) {
  return db
    .select({
      id: clients.id,
      merchantId: clients.merchantId,
      admin: clients.admin,
      universalDataAccess: clients.universalDataAccess,
    })
    .from(clients)
    .where(inArray(clients.id, ids))
    .all();
}

/** The client's sealed signing secrets (security/data-protection.ts, oauth/signing-secrets.ts). */
export async function findClientSigningSecrets(db: Database, id: string) {
  return db
    .select({
      signingSecretSealed: clients.signingSecretSealed,
      previousSigningSecretSealed: clients.previousSigningSecretSealed,
      previousSigningSecretExpires: clients.previousSigningSecretExpires,
    })
    .from(clients)
    .where(eq(clients.id, id))
    .get();
}

/** Whether the merchant exists (a client is made under it). */
export async function merchantExists(db: Database, id: number): Promise<boolean> {
  return (await db.select({ id: merchants.id }).from(merchants).where(eq(merchants.id, id)).get()) !== undefined;
}

/** The client's row, for the batch that makes it. */
export function clientRow(db: Database, client: typeof clients.$inferInsert) {
  return db.insert(clients).values(client);
}

/** The fields sent, for the batch that changes them. */
export function changeClient(db: Database, id: string, fields: Partial<typeof clients.$inferInsert>, now: number) {
  return db
    .update(clients)
    .set({ ...fields, updated: now })
    .where(eq(clients.id, id));
}

/** Deletes the client; its refresh tokens, devices and users' connections go with it (foreign keys). */
/**
 * Replaces a client's secret hash (or its previous secret's) by the same secret's hash under the
 * current data-protection key, unless it changed meanwhile.
 */
export function rehashClientSecret(
  db: Database,
  id: string,
  column: "secretHash" | "previousSecretHash" | "registrationTokenHash",
  stored: string,
  rehashed: string,
) {
  return db
    .update(clients)
    .set({ [column]: rehashed })
    .where(and(eq(clients.id, id), eq(clients[column], stored)));
}

export async function deleteClient(db: Database, id: string): Promise<void> {
  await db.delete(clients).where(eq(clients.id, id));
}

/** Whether the client owns products or digital contents, which nothing deletes with it. */
export async function clientOwnsCommerce(db: Database, id: string): Promise<boolean> {
  const [product, content] = await db.batch([
    db.select({ id: products.id }).from(products).where(eq(products.clientId, id)).limit(1),
    db.select({ id: digitalContents.id }).from(digitalContents).where(eq(digitalContents.clientId, id)).limit(1),
  ]);
  return product.length > 0 || content.length > 0;
}

/** Which clients a change applies to: one, a merchant's, or (null) every client. */
export type ClientScope = { clientId: string } | { merchantId: number } | null;

/** `column` (a client id) within `scope`; the merchant's clients by their index, however many. */
export function inClientScope(db: Database, column: SQLiteColumn, scope: ClientScope): SQL | undefined {
  if (scope === null) return undefined;
  if ("clientId" in scope) return eq(column, scope.clientId);
  return inArray(column, db.select({ id: clients.id }).from(clients).where(eq(clients.merchantId, scope.merchantId)));
}

/**
 * A new secret for the client: the current one becomes the previous, valid until
 * `previousExpires`; an older previous one ends now.
 */
export function rotateClientSecret(db: Database, id: string, secretHash: string, previousExpires: number, now: number) {
  return db
    .update(clients)
    .set({
      previousSecretHash: sql`${clients.secretHash}`,
      previousSecretExpires: previousExpires,
      secretHash,
      updated: now,
    })
    .where(eq(clients.id, id));
}

export function setClientDisabled(db: Database, id: string, disabled: number | null, now: number) {
  return db.update(clients).set({ disabled, updated: now }).where(eq(clients.id, id));
}

/** A new sealed signing secret: the current one becomes the previous, in force until `previousExpires`. */
export function rotateClientSigningSecret(
  db: Database,
  id: string,
  sealed: string,
  previousExpires: number,
  now: number,
) {
  return db
    .update(clients)
    .set({
      previousSigningSecretSealed: sql`${clients.signingSecretSealed}`,
      previousSigningSecretExpires: previousExpires,
      signingSecretSealed: sealed,
      updated: now,
    })
    .where(eq(clients.id, id));
}
