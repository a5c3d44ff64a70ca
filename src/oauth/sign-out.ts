/**
 * Signing a user out everywhere (docs/management.md "Sign out everywhere"): every browser session
 * started through the clients in scope, every refresh token there, and every access token issued
 * under those grants, with a back-channel logout notice to each client that asked for them.
 *
 * Nothing is written here: the notices are queued and the access tokens listed as revoked at
 * their clients' Durable Objects first, and the sessions' and refresh tokens' revocations are
 * returned for the caller's own batch (with the status change or audit entry it records). A fault
 * at any step leaves the user signed in for the caller's retry, never a session ended that no
 * client heard of; a retry queues the notices again (delivery is at least once).
 */
import type { BatchItem } from "drizzle-orm/batch";
import type { Context } from "hono";
import type { Database } from "../db/client";
import type { ClientScope } from "../db/queries/clients";
import { findUserBackchannelClients, findUserGrants, revokeUserRefreshTokens } from "../db/queries/refresh-tokens";
import { findLiveUserSessions, revokeUserSessions } from "../db/queries/sessions";
import { revokeTokens } from "../durable-objects/leases";
import type { AppEnv, Bindings, RequestTiming } from "../env";
import { sendLogoutNotices } from "../queues/logout-notices";
import type { LogoutNotice } from "../schemas/logout-notice";
import { sessionSid } from "./sessions";

/**
 * What a sign-out ends (the live sessions, and the grants that still had a live refresh token),
 * and the statements that end it.
 */
export type SignOut = {
  writes: [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]];
  sessions: number;
  grants: number;
  /** The self-contained grants listed as ended, which alone the writes (or an erasure) may end in D1. */
  endedSelfContained: string[];
};

/** Sessions' `sid`s per look-up of their clients: each is a bound parameter, of D1's 100. */
const SIDS_PER_QUERY = 50;

/**
 * What a sign-out runs on: a request's (`signOutSite`), or the sign-out job's, which has no
 * request. `timing` counts the Durable Object calls into the request's Server-Timing.
 */
export type SignOutSite = { env: Bindings; db: Database; timing?: RequestTiming | undefined };

export function signOutSite(c: Context<AppEnv>): SignOutSite {
  return { env: c.env, db: c.get("db")(), timing: c.get("timing") };
}

/**
 * `sessions: false` leaves the browser sessions alone (a withdrawn consent ends the client's
 * grants, not the user's single sign-on). What a sign-in racing the sign-out starts (after the
 * grants were read) is not ended: its grant-row refresh token by the writes, its self-contained one
 * never in D1 alone, where its tokens would not see it. For a user refused, the sign-out job's next
 * run, which the status change listed, ends it too.
 */
export async function signOutUser(
  site: SignOutSite,
  userId: number,
  scope: ClientScope,
  now: number,
  { sessions: endSessions = true } = {},
): Promise<SignOut> {
  const { env, db, timing } = site;
  const [sessions, grants] = await Promise.all([
    endSessions ? findLiveUserSessions(db, userId, scope, now).all() : [],
    findUserGrants(db, userId, scope, now).all(),
  ]);
  const sids = await Promise.all(sessions.map(({ idHash }) => sessionSid(env, idHash)));
  await sendLogoutNotices(env, await noticesFor(db, userId, scope, sids, now));
  const byClient = Map.groupBy(grants, (grant) => grant.clientId);
  await Promise.all(
    [...byClient].map(([clientId, clientGrants]) =>
      revokeTokens(
        env,
        clientId,
        clientGrants.map(({ grant, liveUntil, selfContained }) => ({
          grant,
          expiresAt: liveUntil * 1000,
          ...(selfContained === 1 && { persistent: true }),
        })),
        timing,
      ),
    ),
  );
  const endedSelfContained = grants.filter(({ selfContained }) => selfContained === 1).map(({ grant }) => grant);
  return {
    writes: [
      revokeUserRefreshTokens(db, userId, scope, now, endedSelfContained),
      ...(endSessions ? [revokeUserSessions(db, userId, scope, now)] : []),
    ],
    sessions: sessions.length,
    grants: grants.filter(({ refreshable }) => refreshable === 1).length,
    endedSelfContained,
  };
}

/**
 * One notice per client and session: with the `sid` where the client's grant came from a browser
 * session, else for the user's every session there (no `sid`), which a client that requires a
 * `sid` (backchannel_logout_session_required) is not sent.
 */
async function noticesFor(
  db: Database,
  userId: number,
  scope: ClientScope,
  sids: string[],
  now: number,
): Promise<LogoutNotice[]> {
  const chunks =
    sids.length === 0
      ? [[]]
      : Array.from({ length: Math.ceil(sids.length / SIDS_PER_QUERY) }, (_, i) =>
          sids.slice(i * SIDS_PER_QUERY, (i + 1) * SIDS_PER_QUERY),
        );
  const found = (
    await Promise.all(chunks.map((chunk) => findUserBackchannelClients(db, userId, scope, chunk, now)))
  ).flat();
  const notices = new Map<string, LogoutNotice>();
  for (const { clientId, uri, alg, sessionRequired, sub, sid } of found) {
    if (sid === null && sessionRequired) continue;
    notices.set(`${clientId} ${sid ?? ""}`, {
      clientId,
      uri,
      alg: alg ?? "RS256",
      sub,
      ...(sid !== null && { sid }),
    });
  }
  return [...notices.values()];
}
