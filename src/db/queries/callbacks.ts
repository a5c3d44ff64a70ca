/**
 * The callbacks' outbox (db/schema/callbacks.ts): the rows a change adds, for its own batch; what
 * a delivery reads and settles; what the retention job and a replay look for.
 */
import { and, asc, eq, isNotNull, isNull, lt, lte, type SQL, sql } from "drizzle-orm";
import type { Database } from "../client";
import { callbackChanges, clients, userClients } from "../schema";
import { type ClientScope, inClientScope } from "./clients";

export type CallbackChange = {
  userId: number;
  /** SPiD's field names: `status`, `connection`, `productAccess`, or the profile's fields. */
  changedFields: readonly string[];
  /** Only the clients in scope are told (null: every client the user is connected to). */
  scope?: ClientScope;
  /** Told only where this holds, as the batch has it so far (the change did change something). */
  onlyIf?: SQL;
};

/**
 * A change's rows, one per client connected to the user that has a callback URL and is enabled,
 * for the change's batch; it returns the clients told, whose schedules are then woken.
 */
export function callbackChangeRows(db: Database, change: CallbackChange, now: number) {
  const { userId, scope = null } = change;
  return db
    .insert(callbackChanges)
    .select(
      db
        .select({
          // Every column, in the table's order; a null id is the next one.
          id: sql<number>`NULL`.as("id"),
          clientId: userClients.clientId,
          merchantId: userClients.merchantId,
          userId: sql<number>`${userId}`.as("user_id"),
          changedFields: sql<string>`${change.changedFields.join(",")}`.as("changed_fields"),
          time: sql<number>`${now}`.as("time"),
          failed: sql<number | null>`NULL`.as("failed"),
        })
        .from(userClients)
        .innerJoin(clients, eq(clients.id, userClients.clientId))
        .where(
          and(
            eq(userClients.userId, userId),
            isNotNull(clients.callbackUrl),
            isNull(clients.disabled),
            inClientScope(db, userClients.clientId, scope),
            change.onlyIf,
            // A change of nothing tells no one.
            change.changedFields.length === 0 ? sql`0` : undefined,
          ),
        ),
    )
    .returning({ clientId: callbackChanges.clientId });
}

/** Where and how a client is told: its callback URL and signing secrets, as stored now. */
export function findCallbackClient(db: Database, clientId: string) {
  return db
    .select({
      merchantId: clients.merchantId,
      callbackUrl: clients.callbackUrl,
      disabled: clients.disabled,
      signingSecretSealed: clients.signingSecretSealed,
      previousSigningSecretSealed: clients.previousSigningSecretSealed,
      previousSigningSecretExpires: clients.previousSigningSecretExpires,
    })
    .from(clients)
    .where(eq(clients.id, clientId))
    .get();
}

/** The client's waiting changes, oldest first, at most `limit`. */
export function waitingChanges(db: Database, clientId: string, limit: number) {
  return db
    .select({
      id: callbackChanges.id,
      userId: callbackChanges.userId,
      changedFields: callbackChanges.changedFields,
      time: callbackChanges.time,
    })
    .from(callbackChanges)
    .where(and(eq(callbackChanges.clientId, clientId), isNull(callbackChanges.failed)))
    .orderBy(asc(callbackChanges.id))
    .limit(limit);
}

const waiting = (clientId: string) => and(eq(callbackChanges.clientId, clientId), isNull(callbackChanges.failed));

/** The waiting changes up to `lastId` were delivered: deleted. */
export function deliveredChanges(db: Database, clientId: string, lastId: number) {
  return db.delete(callbackChanges).where(and(waiting(clientId), lte(callbackChanges.id, lastId)));
}

/** The waiting changes up to `lastId` failed every retry: marked failed, for a replay. */
export function failedChanges(db: Database, clientId: string, lastId: number, now: number) {
  return db
    .update(callbackChanges)
    .set({ failed: now })
    .where(and(waiting(clientId), lte(callbackChanges.id, lastId)));
}

/** Whether changes still wait, for the statement after a settlement in its batch. */
export function changesWaiting(db: Database, clientId: string) {
  return db.select({ id: callbackChanges.id }).from(callbackChanges).where(waiting(clientId)).limit(1);
}

/** A replay: the client's failed changes wait again; it returns them. */
export function replayFailedChanges(db: Database, clientId: string) {
  return db
    .update(callbackChanges)
    .set({ failed: null })
    .where(and(eq(callbackChanges.clientId, clientId), isNotNull(callbackChanges.failed)))
    .returning({ id: callbackChanges.id });
}

/**
 * The clients with a change waiting since before `before`: their schedules were never woken (the
 * Worker stopped between the change and the wake-up), or are overdue.
 */
export function clientsWithOverdueChanges(db: Database, before: number, limit: number) {
  return db
    .selectDistinct({ clientId: callbackChanges.clientId })
    .from(callbackChanges)
    .where(and(isNull(callbackChanges.failed), lt(callbackChanges.time, before)))
    .limit(limit);
}
