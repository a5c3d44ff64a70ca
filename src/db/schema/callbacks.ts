/**
 * Callbacks to clients (docs/callbacks.md): each change a client is to be told of, written in the
 * batch of the change itself, so that a change and its callback land together or not at all.
 * Rows wait here until the client's endpoint accepts them (then they are deleted) or every retry
 * has failed (then `failed` says when, and a replay may send them again). Each row keeps its
 * client and that client's merchant, so it moves with the merchant's shard.
 */
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

export const callbackChanges = sqliteTable(
  "callback_changes",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    clientId: text("client_id").notNull(),
    merchantId: integer("merchant_id").notNull(),
    userId: integer("user_id").notNull(),
    /** Comma-separated, as SPiD's `changedFields`: `status`, `name,addresses`, `connection`, `productAccess`. */
    changedFields: text("changed_fields").notNull(),
    /** Unix seconds. */
    time: integer("time").notNull(),
    /** When the last retry failed; null while the change waits for delivery. */
    failed: integer("failed"),
  },
  (t) => [
    index("callback_changes_client_idx").on(t.clientId, t.failed, t.id),
    index("callback_changes_waiting_idx").on(t.failed, t.time),
  ],
);
