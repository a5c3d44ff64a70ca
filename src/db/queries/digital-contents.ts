import { and, eq, inArray, type SQL, type SQLWrapper } from "drizzle-orm";
import { unionAll } from "drizzle-orm/sqlite-core";
import type { Database } from "../client";
import { digitalContents, products } from "../schema";
import { indexedIf, type Page, pageOrder, withinTime } from "./page";

export type DigitalContentRecord = typeof digitalContents.$inferSelect;

const DIGITAL_CONTENT_SORT_COLUMNS = {
  userProductId: digitalContents.id,
  productId: digitalContents.productId,
  userId: digitalContents.userId,
  status: digitalContents.status,
  created: digitalContents.created,
  updated: digitalContents.updated,
} as const;

export type DigitalContentSort = keyof typeof DIGITAL_CONTENT_SORT_COLUMNS;

/** One client's digital contents, narrowed; every condition has an index that starts with client_id. */
export type DigitalContentSearch = Page<DigitalContentSort> & {
  clientId: string;
  /** Null for every status. */
  statuses: number[] | null;
  userIds?: number[] | undefined;
  productIds?: number[] | undefined;
  /** These products and their child products. */
  familyProductIds?: number[] | undefined;
  timeColumn: "created" | "updated";
};

export function searchDigitalContents(db: Database, search: DigitalContentSearch) {
  const { userIds, productIds, familyProductIds: family } = search;
  const narrowed = [userIds, productIds, family].some((values) => values !== undefined);
  const ofClient = eq(digitalContents.clientId, search.clientId);
  // A product's family (the product and the client's products whose parent it is) as two index
  // lookups joined with UNION ALL: an OR across them would use no index.
  const itemsOf = (productIds: number[] | SQLWrapper) =>
    db
      .select({ id: digitalContents.id })
      .from(digitalContents)
      .where(and(ofClient, inArray(digitalContents.productId, productIds)));
  const children = (parents: number[]) =>
    db
      .select({ id: products.id })
      .from(products)
      .where(and(eq(products.clientId, search.clientId), inArray(products.parentProductId, parents)));
  const inFamily = family && inArray(digitalContents.id, unionAll(itemsOf(family), itemsOf(children(family))));
  const conditions: (SQL | undefined)[] = [
    ofClient,
    // Most of a client's items share a status: a criterion narrows far better, so it picks the index.
    search.statuses ? inArray(indexedIf(digitalContents.status, !narrowed), search.statuses) : undefined,
    userIds && inArray(digitalContents.userId, userIds),
    productIds && inArray(digitalContents.productId, productIds),
    inFamily,
    ...withinTime(digitalContents[search.timeColumn], search),
  ];
  return db
    .select()
    .from(digitalContents)
    .where(and(...conditions))
    .orderBy(...pageOrder(search, DIGITAL_CONTENT_SORT_COLUMNS, digitalContents.id, narrowed))
    .limit(search.limit)
    .offset(search.offset);
}
