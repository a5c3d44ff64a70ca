import { and, eq } from "drizzle-orm";
import type { Database } from "../client";
import { idempotencyKeys } from "../schema";

export function findIdempotencyKey(db: Database, clientId: string, key: string) {
  return db
    .select()
    .from(idempotencyKeys)
    .where(and(eq(idempotencyKeys.clientId, clientId), eq(idempotencyKeys.key, key)))
    .get();
}

export function insertIdempotencyKey(db: Database, row: typeof idempotencyKeys.$inferInsert) {
  return db.insert(idempotencyKeys).values(row);
}
