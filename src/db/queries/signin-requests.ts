import { and, eq, gt, lte, sql } from "drizzle-orm";
import type { Database } from "../client";
import { signinRequests } from "../schema";

/**
 * Makes `request` the address's one live sign-in link, replacing an earlier one, unless the
 * earlier one was made after `notAfter`; answers whether it did, in one statement.
 */
export async function replaceSigninRequest(
  db: Database,
  request: typeof signinRequests.$inferInsert,
  notAfter: number,
): Promise<boolean> {
  const rows = await db
    .insert(signinRequests)
    .values(request)
    .onConflictDoUpdate({
      target: signinRequests.emailKey,
      set: {
        tokenHash: sql`excluded.token_hash`,
        created: sql`excluded.created`,
        expires: sql`excluded.expires`,
      },
      setWhere: lte(signinRequests.created, notAfter),
    })
    .returning({ emailKey: signinRequests.emailKey });
  return rows.length === 1;
}

/** Spends the address's live link when it is `tokenHash` and has not expired; answers whether it was. */
export async function spendSigninRequest(db: Database, emailKey: string, tokenHash: string, now: number) {
  const rows = await db
    .delete(signinRequests)
    .where(liveRequest(emailKey, tokenHash, now))
    .returning({ emailKey: signinRequests.emailKey });
  return rows.length === 1;
}

/** Whether `tokenHash` is still the address's live link (read before a confirmation page). */
export async function isLiveSigninRequest(db: Database, emailKey: string, tokenHash: string, now: number) {
  const row = await db
    .select({ emailKey: signinRequests.emailKey })
    .from(signinRequests)
    .where(liveRequest(emailKey, tokenHash, now))
    .get();
  return row !== undefined;
}

/** Removes a request whose mail could not be sent, unless another has replaced it since. */
export function withdrawSigninRequest(db: Database, emailKey: string, tokenHash: string) {
  return db
    .delete(signinRequests)
    .where(and(eq(signinRequests.emailKey, emailKey), eq(signinRequests.tokenHash, tokenHash)));
}

/** The address's live link, when it is `tokenHash` and has not expired. */
function liveRequest(emailKey: string, tokenHash: string, now: number) {
  return and(
    eq(signinRequests.emailKey, emailKey),
    eq(signinRequests.tokenHash, tokenHash),
    gt(signinRequests.expires, now),
  );
}
