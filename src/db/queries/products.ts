import { and, eq, inArray, type SQL, sql } from "drizzle-orm";
import type { Database } from "../client";
import { products } from "../schema";
import { indexedIf, type Page, pageOrder, withinTime } from "./page";

export type ProductRecord = typeof products.$inferSelect;

const PRODUCT_SORT_COLUMNS = {
  productId: products.id,
  name: products.name,
  code: products.code,
  price: products.price,
  created: products.created,
  changed: products.changed,
  status: products.status,
  type: products.type,
} as const;

export type ProductSort = keyof typeof PRODUCT_SORT_COLUMNS;

/** One client's products, narrowed; every condition here has an index that starts with client_id. */
export type ProductSearch = Page<ProductSort> & {
  clientId: string;
  statuses: number[];
  /** Null for every type. */
  types: number[] | null;
  productIds?: number[] | undefined;
  parentProductIds?: number[] | undefined;
  names?: string[] | undefined;
  codes?: string[] | undefined;
  prices?: number[] | undefined;
  /** Which time `since` and `until` bound. */
  timeColumn: "created" | "changed";
};

export function searchProducts(db: Database, search: ProductSearch) {
  const { productIds, parentProductIds, names, codes, prices } = search;
  const narrowed = [productIds, parentProductIds, names, codes, prices].some((values) => values !== undefined);
  const conditions: (SQL | undefined)[] = [
    eq(products.clientId, search.clientId),
    // Most of a client's products share a status: a criterion narrows far better, so it picks the index.
    inArray(indexedIf(products.status, !narrowed), search.statuses),
    search.types ? inArray(products.type, search.types) : undefined,
    search.productIds && inArray(products.id, search.productIds),
    search.parentProductIds && inArray(products.parentProductId, search.parentProductIds),
    search.names && inArray(products.name, search.names),
    search.codes && inArray(products.code, search.codes),
    search.prices && inArray(products.price, search.prices),
    ...withinTime(products[search.timeColumn], search),
  ];
  return db
    .select()
    .from(products)
    .where(and(...conditions))
    .orderBy(...pageOrder(search, PRODUCT_SORT_COLUMNS, products.id, narrowed))
    .limit(search.limit)
    .offset(search.offset);
}

export function findProductRecord(db: Database, id: number): Promise<ProductRecord | undefined> {
  return db.select().from(products).where(eq(products.id, id)).get();
}

/**
 * A new product: SQLite gives it the id after every product's (an INTEGER PRIMARY KEY's next
 * rowid), inside the batch, so racing creates never take one id twice; the statement returns it.
 */
export function insertProduct(db: Database, product: Omit<typeof products.$inferInsert, "id">) {
  return db.insert(products).values(product).returning({ id: products.id });
}

/** The id of the product the batch's insert just made, for its later statements. */
export const newProductId = sql<number>`(SELECT max(${products.id}) FROM ${products})`;

export function updateProduct(db: Database, id: number, fields: Partial<typeof products.$inferInsert>) {
  return db.update(products).set(fields).where(eq(products.id, id));
}
