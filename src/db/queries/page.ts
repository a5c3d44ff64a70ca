/** What every list query shares: a time window, an order, and one page of it. */
import { asc, desc, gte, lte, type SQL } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";

export type Page<Sort extends string> = {
  since: number | null;
  until: number | null;
  sort: { property: Sort; direction: "asc" | "desc" }[];
  limit: number;
  offset: number;
};

/** `since <= column <= until`, each bound only when given. */
export function withinTime(column: SQLiteColumn, page: Page<string>): (SQL | undefined)[] {
  return [
    page.since === null ? undefined : gte(column, page.since),
    page.until === null ? undefined : lte(column, page.until),
  ];
}

/** The asked-for order, then the row id, so that pages of equal sort values never overlap. */
export function pageOrder<Sort extends string>(
  page: Page<Sort>,
  columns: Record<Sort, SQLiteColumn>,
  id: SQLiteColumn,
): SQL[] {
  return [
    ...page.sort.map(({ property, direction }) => (direction === "asc" ? asc : desc)(columns[property])),
    asc(id),
  ];
}
