import { and, eq, inArray, or, type SQL } from "drizzle-orm";
import type { Database } from "../client";
import { digitalContents } from "../schema";
import { type Page, pageOrder, withinTime } from "./page";

export type DigitalContentRecord = typeof digitalContents.$inferSelect;

export const DIGITAL_CONTENT_SORT_COLUMNS = {
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

export function searchDigitalContents(db: Database, search: DigitalContentSearch): Promise<DigitalContentRecord[]> {
  const family = search.familyProductIds;
  const conditions: (SQL | undefined)[] = [
    eq(digitalContents.clientId, search.clientId),
    search.statuses ? inArray(digitalContents.status, search.statuses) : undefined,
    search.userIds && inArray(digitalContents.userId, search.userIds),
    search.productIds && inArray(digitalContents.productId, search.productIds),
    family && or(inArray(digitalContents.productId, family), inArray(digitalContents.parentProductId, family)),
    ...withinTime(digitalContents[search.timeColumn], search),
  ];
  return db
    .select()
    .from(digitalContents)
    .where(and(...conditions))
    .orderBy(...pageOrder(search, DIGITAL_CONTENT_SORT_COLUMNS, digitalContents.id))
    .limit(search.limit)
    .offset(search.offset);
}
