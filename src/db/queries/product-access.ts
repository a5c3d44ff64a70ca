/**
 * A user's access to a client's digital-content products: the user's digital contents (one row a
 * grant; SPiD's userProductId). Every query of them names the client and the user, and is served
 * by the (client_id, user_id) index; a change is one batch, so grants and revocations racing each
 * other leave one consistent row per product. A blocked row (set by the merchant's import) is
 * never changed here, and keeps the product from being granted.
 */
import { and, desc, eq, exists, inArray, max, notExists, notInArray, sql } from "drizzle-orm";
import type { Database } from "../client";
import { digitalContents, products } from "../schema";
import { DIGITAL_CONTENT_STATUS } from "../../schemas/value-sets";
import { type CallbackChange, callbackChangeRows } from "./callbacks";
import type { DigitalContentRecord } from "./digital-contents";
import { indexedIf, type Page, withinTime } from "./page";

const { available, deleted, blocked } = DIGITAL_CONTENT_STATUS;

export type AccessProduct = Pick<
  typeof products.$inferSelect,
  "id" | "clientId" | "parentProductId" | "type" | "status"
>;

function productQuery(db: Database, productId: number) {
  return db
    .select({
      id: products.id,
      clientId: products.clientId,
      parentProductId: products.parentProductId,
      type: products.type,
      status: products.status,
    })
    .from(products)
    .where(eq(products.id, productId))
    .limit(1);
}

/** The product, whichever client's it is (the caller checks that). */
export async function findAccessProduct(db: Database, productId: number): Promise<AccessProduct | undefined> {
  return (await productQuery(db, productId))[0];
}

type Holder = { clientId: string; userId: number };

const ofHolder = ({ clientId, userId }: Holder) =>
  and(eq(digitalContents.clientId, clientId), eq(digitalContents.userId, userId));

/**
 * The product column written `+product_id`: a user holds a few rows, a popular product has many,
 * so its conditions and grouping leave the (client_id, user_id) index to be chosen.
 */
const productOfRow = indexedIf(digitalContents.productId, false);
/** Likewise the status: most of a client's rows share one. */
const statusOfRow = indexedIf(digitalContents.status, false);

/**
 * The product and whether the user holds it now, at the product's own client, itself or its parent
 * (SPiD's access rule for digital content), in one round trip. The caller checks that the product
 * is one it may ask about; `held` means nothing when it is not.
 */
export async function productAndAccess(
  db: Database,
  userId: number,
  productId: number,
): Promise<{ product: AccessProduct | undefined; held: boolean }> {
  const [found, holding] = await db.batch([productQuery(db, productId), accessRow(db, userId, productId)]);
  return { product: found[0], held: holding.length > 0 };
}

/** The user's available row of the product or of its parent, at the product's client. */
export function accessRow(db: Database, userId: number, productId: number) {
  const ofProduct = (column: typeof products.clientId | typeof products.parentProductId) =>
    sql`(${db.select({ value: column }).from(products).where(eq(products.id, productId))})`;
  return db
    .select({ id: digitalContents.id })
    .from(digitalContents)
    .where(
      and(
        eq(digitalContents.clientId, ofProduct(products.clientId)),
        eq(digitalContents.userId, userId),
        inArray(productOfRow, [sql`${productId}`, ofProduct(products.parentProductId)]),
        eq(statusOfRow, available),
      ),
    )
    .limit(1);
}

/**
 * The user's row of the product that says what a grant came to: a blocked one when there is one,
 * else the newest, the one grants change.
 */
export function grantedRow(db: Database, holder: Holder, productId: number) {
  return db
    .select()
    .from(digitalContents)
    .where(and(ofHolder(holder), eq(productOfRow, productId)))
    .orderBy(desc(sql`${statusOfRow} = ${blocked}`), desc(digitalContents.id))
    .limit(1);
}

/** The user's newest revoked row of the product: what a revocation, the first or a repeated one, answers. */
function revokedRow(db: Database, holder: Holder, productId: number) {
  return db
    .select()
    .from(digitalContents)
    .where(and(ofHolder(holder), eq(productOfRow, productId), eq(statusOfRow, deleted)))
    .orderBy(desc(digitalContents.id))
    .limit(1);
}

/**
 * Grants the product, in one batch: the newest row, expired or revoked, is made available again,
 * or, where the user has none, one is added; nothing changes while any row of it is blocked. The
 * row that says what came of it (grantedRow): available, or blocked.
 */
/**
 * What a grant or a revocation tells the clients (db/queries/callbacks.ts): the statement goes
 * first in the change's batch, told only where the change is about to change something.
 */
export type AccessTelling = Omit<CallbackChange, "userId" | "changedFields" | "onlyIf">;

function accessCallbackRows(
  db: Database,
  holder: Holder,
  productId: number,
  change: "grant" | "revoke",
  tell: AccessTelling,
  now: number,
) {
  const rows = (statuses: number[], other: boolean) =>
    db
      .select({ id: digitalContents.id })
      .from(digitalContents)
      .where(
        and(
          ofHolder(holder),
          eq(productOfRow, productId),
          other ? notInArray(statusOfRow, statuses) : inArray(statusOfRow, statuses),
        ),
      );
  // A grant changes something unless the user holds the product or is blocked from it; a
  // revocation where the user has a row that is neither revoked nor blocked.
  const onlyIf =
    change === "grant" ? notExists(rows([available, blocked], false)) : exists(rows([deleted, blocked], true));
  return callbackChangeRows(db, { ...tell, userId: holder.userId, changedFields: ["productAccess"], onlyIf }, now);
}

export async function grantAccess(
  db: Database,
  holder: Holder,
  product: AccessProduct,
  tell: AccessTelling,
  now: number,
): Promise<{ row: DigitalContentRecord; told: { clientId: string }[] }> {
  const ofProduct = and(ofHolder(holder), eq(productOfRow, product.id));
  const newest = db
    .select({ id: max(digitalContents.id) })
    .from(digitalContents)
    .where(ofProduct);
  const [told, , , after] = await db.batch([
    accessCallbackRows(db, holder, product.id, "grant", tell, now),
    db
      .update(digitalContents)
      .set({ status: available, count: 1, statusMsg: null, updated: now })
      .where(
        and(
          eq(digitalContents.id, newest),
          notInArray(statusOfRow, [available, blocked]),
          notExists(
            db
              .select({ id: digitalContents.id })
              .from(digitalContents)
              .where(and(ofProduct, eq(statusOfRow, blocked))),
          ),
        ),
      ),
    // Added, from the product's own row, only where the user has none of it.
    db.insert(digitalContents).select(
      db
        .select({
          // Every column, in the table's order; a null id is the next one.
          id: sql<number>`NULL`.as("id"),
          productId: products.id,
          parentProductId: products.parentProductId,
          clientId: products.clientId,
          userId: sql<number>`${holder.userId}`.as("user_id"),
          orderId: sql<number | null>`NULL`.as("order_id"),
          status: sql<number>`${available}`.as("status"),
          count: sql<number>`1`.as("count"),
          bundleId: sql<number | null>`NULL`.as("bundle_id"),
          statusMsg: sql<string | null>`NULL`.as("status_msg"),
          created: sql<number>`${now}`.as("created"),
          updated: sql<number>`${now}`.as("updated"),
        })
        .from(products)
        .where(
          and(
            eq(products.id, product.id),
            notExists(db.select({ id: digitalContents.id }).from(digitalContents).where(ofProduct)),
          ),
        ),
    ),
    grantedRow(db, holder, product.id),
  ]);
  return { row: after[0]!, told };
}

/**
 * Revokes the product: every row of it available or expired is marked deleted, in one batch with
 * the newest revoked row (by this call or an earlier one), or undefined when the user never held
 * the product (or holds only blocked rows of it).
 */
export async function revokeAccess(
  db: Database,
  holder: Holder,
  productId: number,
  tell: AccessTelling,
  now: number,
): Promise<{ row: DigitalContentRecord | undefined; told: { clientId: string }[] }> {
  const ofProduct = and(ofHolder(holder), eq(productOfRow, productId));
  const [told, , after] = await db.batch([
    accessCallbackRows(db, holder, productId, "revoke", tell, now),
    db
      .update(digitalContents)
      .set({ status: deleted, count: 0, statusMsg: null, updated: now })
      .where(and(ofProduct, notInArray(statusOfRow, [deleted, blocked]))),
    revokedRow(db, holder, productId),
  ]);
  return { row: after[0], told };
}

export type UserProductsQuery = Holder &
  Page<never> & {
    /** Null for every status. */
    statuses: number[] | null;
  };

/**
 * The user's products at the client, one row a product (its newest among the statuses asked
 * for), in product order: SPiD's list keyed by productId.
 */
export function userProducts(db: Database, query: UserProductsQuery) {
  const newestOfEach = db
    .select({ id: max(digitalContents.id) })
    .from(digitalContents)
    .where(
      and(
        ofHolder(query),
        query.statuses ? inArray(statusOfRow, query.statuses) : undefined,
        ...withinTime(digitalContents.created, query),
      ),
    )
    .groupBy(productOfRow);
  return db
    .select()
    .from(digitalContents)
    .where(inArray(digitalContents.id, newestOfEach))
    .orderBy(digitalContents.productId)
    .limit(query.limit)
    .offset(query.offset);
}
