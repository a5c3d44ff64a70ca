/**
 * The sign-out job (a Cron Trigger, every minute; docs/security.md "A status that refuses
 * sign-in"): a user whose status became inactive, blocked or deleted by a write that did not sign
 * them out itself (a bulk import) is signed out everywhere, as the management API does at once:
 * browser sessions, refresh tokens, the access tokens issued under them (listed at their clients'
 * Durable Objects) and back-channel logout notices. Each user is one sign-out and one batch; one
 * that fails stays listed for the next run. The management API signs a user it refuses out at
 * once and leaves the listing for this job too: its run a minute later ends a grant a sign-in
 * racing that sign-out started (oauth/sign-out.ts), and repeats the rest harmlessly.
 */
import { openDatabase } from "../db/client";
import { findPendingSignOuts, settlePendingSignOut } from "../db/queries/status-sign-outs";
import type { Bindings } from "../env";
import { logUnlessPlatformFault } from "../errors";
import { signOutUser } from "../oauth/sign-out";

/** The cron expression that runs this job (wrangler.toml [triggers]). */
export const SIGN_OUT_CRON = "* * * * *";
/** Users one run signs out at most, the oldest change first; an import that refuses more takes more runs. */
export const SIGN_OUTS_PER_RUN = 500;
/** Users signed out at the same time. */
const AT_ONCE = 10;

export type SignOuts = { signedOut: number; failed: number };

/**
 * `clock` tells each sign-out's time: a run's last users are signed out later than its first, and
 * their access tokens are listed as revoked for as long as they can live from then.
 */
export async function signOutRefusedUsers(env: Bindings, clock: () => number): Promise<SignOuts> {
  const db = openDatabase(env.DB);
  const pending = await findPendingSignOuts(db, SIGN_OUTS_PER_RUN).all();
  const done: SignOuts = { signedOut: 0, failed: 0 };
  for (let i = 0; i < pending.length; i += AT_ONCE) {
    const results = await Promise.allSettled(
      pending.slice(i, i + AT_ONCE).map(async ({ userId }) => {
        const now = clock();
        const signOut = await signOutUser({ env, db }, userId, null, now);
        await db.batch([...signOut.writes, settlePendingSignOut(db, userId, now)]);
      }),
    );
    for (const result of results) {
      if (result.status === "fulfilled") done.signedOut += 1;
      else {
        done.failed += 1;
        logUnlessPlatformFault("sign-out job: a user left for the next run", result.reason);
      }
    }
  }
  return done;
}
