/** A user's passkeys (oauth/factors/webauthn.ts). */
import { and, asc, eq } from "drizzle-orm";
import type { Database } from "../client";
import { passkeys, users } from "../schema";

export type PasskeyRecord = typeof passkeys.$inferSelect;

/** The user's passkeys, oldest first. */
export function listPasskeys(db: Database, userId: number) {
  return db
    .select({
      id: passkeys.id,
      name: passkeys.name,
      created: passkeys.created,
      lastUsed: passkeys.lastUsed,
      transports: passkeys.transports,
    })
    .from(passkeys)
    .where(eq(passkeys.userId, userId))
    .orderBy(asc(passkeys.created), asc(passkeys.id))
    .all();
}

/** The passkey `id`, with its user's status and uuid. */
export function findPasskey(db: Database, id: string) {
  return db
    .select({ passkey: passkeys, status: users.status, uuid: users.uuid })
    .from(passkeys)
    .innerJoin(users, eq(users.id, passkeys.userId))
    .where(eq(passkeys.id, id))
    .get();
}

export function insertPasskey(db: Database, passkey: typeof passkeys.$inferInsert) {
  return db.insert(passkeys).values(passkey);
}

/** Removes the user's passkey `id`; whether there was one. */
export async function deletePasskey(db: Database, userId: number, id: string): Promise<boolean> {
  const removed = await db
    .delete(passkeys)
    .where(and(eq(passkeys.userId, userId), eq(passkeys.id, id)))
    .returning({ id: passkeys.id });
  return removed.length === 1;
}

/**
 * Records a sign-in with the passkey: its new counter and backup state, unless another sign-in
 * moved the counter meanwhile (two racing uses of one signature counter cannot both count).
 * Whether it was recorded.
 */
export async function recordPasskeyUse(
  db: Database,
  passkey: Pick<PasskeyRecord, "id" | "counter">,
  use: { counter: number; backedUp: boolean; now: number },
): Promise<boolean> {
  const recorded = await db
    .update(passkeys)
    .set({ counter: use.counter, backedUp: use.backedUp, lastUsed: use.now })
    .where(and(eq(passkeys.id, passkey.id), eq(passkeys.counter, passkey.counter)))
    .returning({ id: passkeys.id });
  return recorded.length === 1;
}

export function deleteUserPasskeys(db: Database, userId: number) {
  return db.delete(passkeys).where(eq(passkeys.userId, userId));
}
