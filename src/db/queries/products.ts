import { and, asc, desc, eq, gte, inArray, lte, type SQL } from "drizzle-orm";
import type { Database } from "../client";
import { products } from "../schema";

export type ProductRecord = typeof products.$inferSelect;

export const PRODUCT_SORT_COLUMNS = {
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
export type ProductSearch = {
  clientId: string;
  statuses: number[];
  /** Null for every type. */
  types: number[] | null;
  productIds?: number[];
  parentProductIds?: number[];
  names?: string[];
  codes?: string[];
  prices?: number[];
  /** Which time `since` and `until` bound. */
  timeColumn: "created" | "changed";
  since: number | null;
  until: number | null;
  sort: { property: ProductSort; direction: "asc" | "desc" }[];
  limit: number;
  offset: number;
};

export function searchProducts(db: Database, search: ProductSearch): Promise<ProductRecord[]> {
  const time = products[search.timeColumn];
  const conditions: (SQL | undefined)[] = [
    eq(products.clientId, search.clientId),
    inArray(products.status, search.statuses),
    search.types ? inArray(products.type, search.types) : undefined,
    search.productIds && inArray(products.id, search.productIds),
    search.parentProductIds && inArray(products.parentProductId, search.parentProductIds),
    search.names && inArray(products.name, search.names),
    search.codes && inArray(products.code, search.codes),
    search.prices && inArray(products.price, search.prices),
    search.since === null ? undefined : gte(time, search.since),
    search.until === null ? undefined : lte(time, search.until),
  ];
  // The product id last, so that pages of equal sort values never overlap.
  const order = [
    ...search.sort.map(({ property, direction }) => (direction === "asc" ? asc : desc)(PRODUCT_SORT_COLUMNS[property])),
    asc(products.id),
  ];
  return db
    .select()
    .from(products)
    .where(and(...conditions))
    .orderBy(...order)
    .limit(search.limit)
    .offset(search.offset);
}
