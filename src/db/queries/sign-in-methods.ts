/** What the account page shows of a user's ways to sign in, in one round trip. */
import { and, asc, count, eq, isNull } from "drizzle-orm";
import type { Database } from "../client";
import { passkeys, recoveryCodes, totpFactors, users } from "../schema";

export async function signInMethods(db: Database, userId: number) {
  const [user, keys, factor, codes] = await db.batch([
    db
      .select({ email: users.email, uuid: users.uuid, passwordHash: users.passwordHash })
      .from(users)
      .where(eq(users.id, userId)),
    db
      .select({ id: passkeys.id, name: passkeys.name, created: passkeys.created, lastUsed: passkeys.lastUsed })
      .from(passkeys)
      .where(eq(passkeys.userId, userId))
      .orderBy(asc(passkeys.created), asc(passkeys.id)),
    db.select({ since: totpFactors.created }).from(totpFactors).where(eq(totpFactors.userId, userId)),
    db
      .select({ left: count() })
      .from(recoveryCodes)
      .where(and(eq(recoveryCodes.userId, userId), isNull(recoveryCodes.used))),
  ]);
  const row = user[0];
  if (!row) return undefined;
  return {
    email: row.email ?? "",
    uuid: row.uuid,
    hasPassword: row.passwordHash !== null,
    passkeys: keys,
    authenticator: factor[0] ? { since: factor[0].since, codesLeft: codes[0]?.left ?? 0 } : null,
  };
}
