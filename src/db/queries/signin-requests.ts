import { and, eq, gt, lte, sql } from "drizzle-orm";
import type { Database } from "../client";
import { signinRequests } from "../schema";

/**
 * Makes `request` its subject's one live sign-in link, replacing an earlier one, unless the
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
      target: signinRequests.subject,
      set: {
        tokenHash: sql`excluded.token_hash`,
        created: sql`excluded.created`,
        expires: sql`excluded.expires`,
      },
      setWhere: lte(signinRequests.created, notAfter),
    })
    .returning({ subject: signinRequests.subject });
  return rows.length === 1;
}

/** Spends the subject's live link when it is `tokenHash` and has not expired; answers whether it was. */
export async function spendSigninRequest(db: Database, subject: string, tokenHash: string, now: number) {
  const rows = await db
    .delete(signinRequests)
    .where(liveRequest(subject, tokenHash, now))
    .returning({ subject: signinRequests.subject });
  return rows.length === 1;
}

/** Whether `tokenHash` is still its subject's live link (read before a confirmation page). */
export async function isLiveSigninRequest(db: Database, subject: string, tokenHash: string, now: number) {
  const row = await db
    .select({ subject: signinRequests.subject })
    .from(signinRequests)
    .where(liveRequest(subject, tokenHash, now))
    .get();
  return row !== undefined;
}

/** Removes a request whose mail could not be sent, unless another has replaced it since. */
export function withdrawSigninRequest(db: Database, subject: string, tokenHash: string) {
  return db
    .delete(signinRequests)
    .where(and(eq(signinRequests.subject, subject), eq(signinRequests.tokenHash, tokenHash)));
}

/** The subject's live link, when it is `tokenHash` and has not expired. */
function liveRequest(subject: string, tokenHash: string, now: number) {
  return and(
    eq(signinRequests.subject, subject),
    eq(signinRequests.tokenHash, tokenHash),
    gt(signinRequests.expires, now),
  );
}
