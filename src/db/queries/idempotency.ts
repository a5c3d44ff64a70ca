import { and, eq, lte } from "drizzle-orm";
import type { SQLiteInsertValue } from "drizzle-orm/sqlite-core";
import type { Database } from "../client";
import { idempotencyKeys } from "../schema";

export function findIdempotencyKey(db: Database, clientId: string, key: string) {
  return db
    .select()
    .from(idempotencyKeys)
    .where(and(eq(idempotencyKeys.clientId, clientId), eq(idempotencyKeys.key, key)))
    .get();
}

/**
 * A key's record: its stale record (created at or before `staleBefore`, not yet purged) goes
 * first; a live one makes the insert, and so the batch it is in, fail.
 */
export function recordIdempotencyKey(
  db: Database,
  row: SQLiteInsertValue<typeof idempotencyKeys>,
  staleBefore: number,
) {
  return [
    db
      .delete(idempotencyKeys)
      .where(
        and(
          eq(idempotencyKeys.clientId, row.clientId),
          eq(idempotencyKeys.key, row.key),
          lte(idempotencyKeys.created, staleBefore),
        ),
      ),
    db.insert(idempotencyKeys).values(row),
  ] as const;
}
