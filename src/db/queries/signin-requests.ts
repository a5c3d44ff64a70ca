import { type AnyColumn, and, eq, gt, inArray, isNull, or, type SQL, sql } from "drizzle-orm";
import type { Database } from "../client";
import { signinRequests } from "../schema";

/** The earlier link that kept its place: when its mail went out (null: not yet), and when it was made. */
export type HeldSigninRequest = { mailed: number | null; created: number };

/**
 * Makes `request` its subject's one live sign-in link, replacing the earlier one unless that one
 * holds: mailed after `mailedAfter`, or not mailed yet and made after `madeAfter` (its mail is
 * still being sent). One statement, so two requests at once cannot both take the row; answers
 * null when it replaced, else the earlier one as it stays.
 */
export async function replaceSigninRequest(
  db: Database,
  request: { subject: string; tokenHash: string; created: number; expires: number },
  { mailedAfter, madeAfter }: { mailedAfter: number; madeAfter: number },
): Promise<HeldSigninRequest | null> {
  const held = or(
    gt(signinRequests.mailed, mailedAfter),
    and(isNull(signinRequests.mailed), gt(signinRequests.created, madeAfter)),
  );
  // Every column keeps its value where the earlier row holds, so the statement always returns
  // the row, and says which one it is.
  const unlessHeld = (column: AnyColumn, value: SQL) => sql`CASE WHEN ${held} THEN ${column} ELSE ${value} END`;
  const [row] = await db
    .insert(signinRequests)
    .values(request)
    .onConflictDoUpdate({
      target: signinRequests.subject,
      set: {
        tokenHash: unlessHeld(signinRequests.tokenHash, sql`excluded.token_hash`),
        created: unlessHeld(signinRequests.created, sql`excluded.created`),
        expires: unlessHeld(signinRequests.expires, sql`excluded.expires`),
        mailed: unlessHeld(signinRequests.mailed, sql`NULL`),
      },
    })
    .returning({
      tokenHash: signinRequests.tokenHash,
      mailed: signinRequests.mailed,
      created: signinRequests.created,
    });
  return row!.tokenHash === request.tokenHash ? null : { mailed: row!.mailed, created: row!.created };
}

/** Records that the mail of the subject's link `tokenHash` went out, at `now` (a batch item of the mail's record). */
export function markSigninRequestMailed(db: Database, subject: string, tokenHash: string, now: number) {
  return db
    .update(signinRequests)
    .set({ mailed: now })
    .where(and(eq(signinRequests.subject, subject), eq(signinRequests.tokenHash, tokenHash)));
}

/**
 * Which of `hashes` the subject's unexpired row holds: the link's own token hash while it is live,
 * or a claim (claimSigninRequest) once a browser has started using it.
 */
export async function heldSigninRequestHash(
  db: Database,
  subject: string,
  hashes: string[],
  now: number,
): Promise<string | undefined> {
  const row = await db
    .select({ tokenHash: signinRequests.tokenHash })
    .from(signinRequests)
    .where(
      and(
        eq(signinRequests.subject, subject),
        inArray(signinRequests.tokenHash, hashes),
        gt(signinRequests.expires, now),
      ),
    )
    .get();
  return row?.tokenHash;
}

/**
 * Hands the subject's live link `tokenHash` to one use: the row then holds `claim` instead, so the
 * link no longer works for anyone else, while the use that holds the claim may be tried again.
 * Answers whether the row now holds `claim` (also when it already did), in one statement.
 */
export async function claimSigninRequest(
  db: Database,
  subject: string,
  tokenHash: string,
  claim: string,
  now: number,
): Promise<boolean> {
  const rows = await db
    .update(signinRequests)
    .set({ tokenHash: claim })
    .where(
      and(
        eq(signinRequests.subject, subject),
        inArray(signinRequests.tokenHash, [tokenHash, claim]),
        gt(signinRequests.expires, now),
      ),
    )
    .returning({ subject: signinRequests.subject });
  return rows.length === 1;
}

/**
 * Removes the subject's row while it holds `tokenHash`: a link whose mail could not be sent, or
 * whose request failed before it; a claim whose use has been answered.
 */
export function withdrawSigninRequest(db: Database, subject: string, tokenHash: string) {
  return db
    .delete(signinRequests)
    .where(and(eq(signinRequests.subject, subject), eq(signinRequests.tokenHash, tokenHash)));
}

/** Ends the user's live link, whatever it is: an address change makes any earlier link moot. */
export function withdrawUserLinks(db: Database, userId: number) {
  return db.delete(signinRequests).where(eq(signinRequests.subject, `user:${userId}`));
}
