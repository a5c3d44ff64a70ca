/** What every list query shares: a time window, an order, and one page of it. */
import { asc, desc, gte, lte, type SQL, sql } from "drizzle-orm";
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

/**
 * The column as it is, or, when `indexed` is false, written `+column`: an expression no index
 * serves, so that a condition or order on it leaves the choice of index to the other conditions.
 */
export function indexedIf(column: SQLiteColumn, indexed: boolean): SQL {
  return indexed ? sql`${column}` : sql`+${column}`;
}

/**
 * The asked-for order, then the row id in the direction of the last term, so that pages of equal
 * sort values never overlap and one index can deliver the whole order. When the query is
 * `narrowed` by a criterion, the order's columns are written `+column`: SQLite then picks the
 * index by the WHERE clause (a few matching rows, sorted) rather than walk a whole client's rows
 * in order, which it would otherwise prefer without table statistics.
 */
export function pageOrder<Sort extends string>(
  page: Page<Sort>,
  columns: Record<Sort, SQLiteColumn>,
  id: SQLiteColumn,
  narrowed: boolean,
): SQL[] {
  const term = (column: SQLiteColumn, direction: "asc" | "desc") =>
    (direction === "asc" ? asc : desc)(indexedIf(column, !narrowed));
  const last = page.sort.at(-1)?.direction ?? "asc";
  return [...page.sort.map(({ property, direction }) => term(columns[property], direction)), term(id, last)];
}
