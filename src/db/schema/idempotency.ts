/**
 * Idempotency keys of the API's creates and rotations (the `Idempotency-Key` header;
 * docs/management.md "Retrying a create"): per client, what the key's request made and a hash of
 * the request, written in that request's own batch. Kept a day (jobs/retention.ts).
 */
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    clientId: text("client_id").notNull(),
    key: text("key").notNull(),
    /** SHA-256 of the request's method, path and body: the same key with another request is refused. */
    requestHash: text("request_hash").notNull(),
    /** What the request made: `user:<uuid>`, or a rotation's end and its new secret, sealed. */
    resource: text("resource").notNull(),
    created: integer("created").notNull(),
  },
  (t) => [primaryKey({ columns: [t.clientId, t.key] }), index("idempotency_keys_created_idx").on(t.created)],
);
