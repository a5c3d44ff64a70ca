import { and, eq, getTableColumns, gt, inArray, isNotNull, isNull, notInArray, or, sql } from "drizzle-orm";
import type { Database } from "../client";
import { clients, REFUSED_USER_STATUSES, refreshTokens, users } from "../schema";
import { type ClientScope, inClientScope } from "./clients";
import { jsonValues } from "./users";

export type RefreshTokenRecord = typeof refreshTokens.$inferSelect;

export function insertRefreshToken(db: Database, token: typeof refreshTokens.$inferInsert) {
  return db.insert(refreshTokens).values(token);
}

/**
 * A grant that has no refresh token (a JWT assertion's), recorded as a family whose one row can
 * never be used: revoked and expired from the start, and a hash no presented token has (a token's
 * hash is base64url, without `:`). Signing a user out finds the grant by it and revokes its access
 * tokens (oauth/sign-out.ts); the retention job purges it once they have expired.
 */
export function recordGrantWithoutRefreshToken(
  db: Database,
  grant: { clientId: string; userId: number; family: string; scope: string; now: number },
) {
  return db.insert(refreshTokens).values({
    tokenHash: `grant:${grant.family}`,
    clientId: grant.clientId,
    userId: grant.userId,
    family: grant.family,
    scope: grant.scope,
    created: grant.now,
    expires: grant.now,
    revoked: grant.now,
  });
}

/** A grant's next token as stored: its keyed hash, and its lifetime. */
type Successor = { secretHash: string; created: number; expires: number };
/** A new grant's first token as stored: its row's locator key besides. */
type FirstToken = Successor & { tokenHash: string };

/** What a token presented as `tokenHashes` (its stored forms, oauth/refresh-tokens.ts) names: a grant's locator key, or itself. */
export type Presented = { tokenHashes: string[]; locatorKey: string | null };

/**
 * The row a presented token names: a grant's, by its locator; a token of the earlier form's own,
 * by its hash.
 */
function named({ tokenHashes, locatorKey }: Presented) {
  return locatorKey === null ? inArray(refreshTokens.tokenHash, tokenHashes) : eq(refreshTokens.tokenHash, locatorKey);
}

/** The token is its row's current one: for a grant's row its secret's hash, else the row's own. */
function current(row: RefreshTokenRecord, { tokenHashes, locatorKey }: Presented): boolean {
  return locatorKey === null || (row.secretHash !== null && tokenHashes.includes(row.secretHash));
}

/** The row a presented token names (its grant's, or its own), and whether it is that row's current token. */
export async function findRefreshToken(db: Database, presented: Presented) {
  const row = await db.select().from(refreshTokens).where(named(presented)).get();
  return row && { ...row, current: current(row, presented) };
}

function selectForRotation(db: Database) {
  return db
    .select({ token: refreshTokens, userStatus: users.status, userUuid: users.uuid })
    .from(refreshTokens)
    .leftJoin(users, eq(users.id, refreshTokens.userId));
}

export type TokenForRotation = Awaited<ReturnType<typeof findRefreshTokenForRotation>>;

/** The named row with its user's status (null when the user is gone) and subject, in one read for the refresh grant. */
export async function findRefreshTokenForRotation(db: Database, presented: Presented) {
  const found = await selectForRotation(db).where(named(presented)).get();
  return found && { ...found, current: current(found.token, presented) };
}

/** Whether the row's user may still sign in (neither gone nor inactive, blocked or deleted). */
const userMaySignIn = sql`EXISTS (SELECT 1 FROM ${users} WHERE ${users.id} = ${refreshTokens.userId} AND ${notInArray(users.status, Object.keys(REFUSED_USER_STATUSES).map(Number))})`;

/**
 * The refresh grant's one D1 round trip, one statement: in the grant row `locatorKey` names, the
 * current token, if it is the presented one (stored as one of `tokenHashes`), `clientId`'s, live
 * and unexpired, and its user may sign in, is replaced by `successor` (the presented one's hash
 * kept as `rotated_from`, for the grace window), and the row comes back with its user's subject.
 * Undefined when nothing was replaced: the row, read then, says why.
 */
export async function rotateInPlace(
  db: Database,
  { tokenHashes, locatorKey }: { tokenHashes: string[]; locatorKey: string },
  clientId: string,
  successor: Successor,
): Promise<NonNullable<TokenForRotation> | undefined> {
  const userOf = (column: typeof users.uuid | typeof users.status) =>
    sql`(SELECT ${column} FROM ${users} WHERE ${users.id} = ${refreshTokens.userId})`;
  // A batch of one: D1 reports the rows a batch reads and writes (development's Server-Timing).
  const [[row]] = await db.batch([
    db
      .update(refreshTokens)
      .set({
        secretHash: successor.secretHash,
        rotatedFrom: sql`${refreshTokens.secretHash}`,
        rotated: successor.created,
        created: successor.created,
        expires: successor.expires,
      })
      .where(
        and(
          eq(refreshTokens.tokenHash, locatorKey),
          inArray(refreshTokens.secretHash, tokenHashes),
          eq(refreshTokens.clientId, clientId),
          isNull(refreshTokens.revoked),
          gt(refreshTokens.expires, successor.created),
          userMaySignIn,
        ),
      )
      .returning({
        ...getTableColumns(refreshTokens),
        userUuid: userOf(users.uuid).mapWith(users.uuid),
        userStatus: userOf(users.status).mapWith(users.status),
      }),
  ]);
  if (!row) return undefined;
  const { userUuid, userStatus, ...token } = row;
  return { token, userUuid, userStatus, current: true };
}

/**
 * A rotation in place repeated within the grace window: the grant's current token, unused since
 * the rotation the presented token made (`rotated_from` is still that token's hash), is replaced
 * by `successor`, whichever repeat replaced it last. False when the current token has been used
 * since, or the grant was revoked.
 */
export async function replaceCurrentToken(db: Database, row: RefreshTokenRecord, successor: Successor) {
  const replaced = await db
    .update(refreshTokens)
    .set({ secretHash: successor.secretHash, created: successor.created, expires: successor.expires })
    .where(
      and(
        eq(refreshTokens.id, row.id),
        eq(refreshTokens.rotatedFrom, row.rotatedFrom ?? ""),
        isNull(refreshTokens.revoked),
      ),
    )
    .run();
  return replaced.meta.changes === 1;
}

/**
 * Rotation in one batch: the presented token is marked rotated (and so revoked) if nobody revoked
 * it first, and only then its successor inserted in the same family as its child. False when the
 * revocation did not take, because something revoked the token first: nothing is inserted.
 */
export async function rotateRefreshToken(
  db: Database,
  presented: RefreshTokenRecord,
  successor: FirstToken,
): Promise<boolean> {
  const [rotated] = await db.batch([
    db
      .update(refreshTokens)
      .set({ revoked: successor.created, rotated: successor.created })
      .where(and(eq(refreshTokens.id, presented.id), isNull(refreshTokens.revoked))),
    insertSuccessorAfterUpdate(db, presented, successor),
  ]);
  return rotated.meta.changes === 1;
}

/**
 * A rotation repeated within the grace window (oauth/refresh-tokens.ts), in one batch: the unused
 * successor `parent` was rotated into is revoked and `successor` inserted in its place. False,
 * with nothing inserted, when no successor of `parent` was left unused and unrevoked.
 */
export async function replaceUnusedSuccessor(
  db: Database,
  parent: RefreshTokenRecord,
  successor: FirstToken,
): Promise<boolean> {
  const [replaced] = await db.batch([
    db
      .update(refreshTokens)
      .set({ revoked: successor.created })
      // The family's index finds the parent's children (parent_id has no index of its own).
      .where(
        and(
          eq(refreshTokens.family, parent.family),
          eq(refreshTokens.parentId, parent.id),
          isNull(refreshTokens.revoked),
          // A successor rotated in place since has been used.
          isNull(refreshTokens.rotated),
        ),
      ),
    insertSuccessorAfterUpdate(db, parent, successor),
  ]);
  return replaced.meta.changes > 0;
}

/**
 * `successor` as `parent`'s child, inserted only when the batch's update before it changed a row
 * (SQLite's changes(), in the batch's one transaction): a rotation that lost its race, or found no
 * unused successor to replace, leaves no live token behind for a later request to count.
 */
function insertSuccessorAfterUpdate(db: Database, parent: RefreshTokenRecord, successor: FirstToken) {
  const value = <T>(v: T) => sql<T>`${v}`;
  return db.insert(refreshTokens).select(
    db
      .select({
        // Every column in the table's order, as drizzle's insert from a select asks.
        id: sql<number>`NULL`.as("id"),
        tokenHash: value(successor.tokenHash).as("token_hash"),
        clientId: refreshTokens.clientId,
        userId: refreshTokens.userId,
        scope: refreshTokens.scope,
        family: refreshTokens.family,
        created: value(successor.created).as("created"),
        expires: value(successor.expires).as("expires"),
        revoked: sql<null>`NULL`.as("revoked"),
        parentId: refreshTokens.id,
        rotated: sql<null>`NULL`.as("rotated"),
        secretHash: value(successor.secretHash).as("secret_hash"),
        rotatedFrom: sql<null>`NULL`.as("rotated_from"),
        authTime: refreshTokens.authTime,
        sid: refreshTokens.sid,
        method: refreshTokens.method,
        claims: refreshTokens.claims,
      })
      .from(refreshTokens)
      // The parent's row, which gives the successor its client, user, scope, family and sign-in.
      .where(and(eq(refreshTokens.id, parent.id), sql`changes() > 0`)),
  );
}

/** Reuse of a rotated token (RFC 9700 §4.14.2): every token of its family stops working. */
export function revokeRefreshTokenFamily(db: Database, family: string, now: number) {
  return db
    .update(refreshTokens)
    .set({ revoked: now })
    .where(and(eq(refreshTokens.family, family), isNull(refreshTokens.revoked)));
}

/**
 * The clients that received an ID token in the browser session `sid` (its grants' refresh tokens
 * carry it) and take back-channel logout notices, with the user's subject for each; by the
 * refresh tokens' `sid` index.
 */
export function backchannelClients(db: Database, sid: string) {
  return backchannelTargets(db).where(and(eq(refreshTokens.sid, sid), isNotNull(clients.backchannelLogoutUri)));
}

/** The clients behind refresh tokens, with what a back-channel logout notice to each needs. */
function backchannelTargets(db: Database) {
  return db
    .selectDistinct({
      clientId: clients.id,
      uri: clients.backchannelLogoutUri,
      alg: clients.idTokenSignedResponseAlg,
      sessionRequired: clients.backchannelLogoutSessionRequired,
      sub: users.uuid,
      sid: refreshTokens.sid,
    })
    .from(refreshTokens)
    .innerJoin(clients, eq(clients.id, refreshTokens.clientId))
    .innerJoin(users, eq(users.id, refreshTokens.userId));
}

export async function findBackchannelClients(db: Database, sid: string) {
  const rows = await backchannelClients(db, sid).all();
  return rows.map(({ uri, ...row }) => ({ ...row, uri: uri! }));
}

/**
 * The row key of a self-contained grant (oauth/self-contained-refresh-tokens.ts): `pt:<locator>`,
 * from when only persistent tokens carried their grant.
 */
export const SELF_CONTAINED_GRANT_PREFIX = "pt:";
/** The row is a self-contained grant's (its tokens are checked at the client's Durable Object). */
export const isSelfContainedGrant = sql`${refreshTokens.tokenHash} LIKE ${`${SELF_CONTAINED_GRANT_PREFIX}%`}`;

/** When a self-contained grant's row, found by its tokens' locator, was revoked (null: live), if it is there. */
export function findSelfContainedGrant(db: Database, locator: string) {
  return db
    .select({ revoked: refreshTokens.revoked })
    .from(refreshTokens)
    .where(eq(refreshTokens.tokenHash, `${SELF_CONTAINED_GRANT_PREFIX}${locator}`))
    .get();
}

/**
 * When the row's grant last issued, or may yet issue, an access token, as of `now`: a grant-row
 * token's row at its creation (each refresh rewrites it); a self-contained grant's row (written
 * once) up to its revocation or end, since its refreshes write nothing in D1.
 */
export function lastIssue(now: number) {
  return sql<number>`CASE WHEN ${isSelfContainedGrant} THEN min(coalesce(${refreshTokens.revoked}, ${now}), ${refreshTokens.expires}) ELSE ${refreshTokens.created} END`;
}

/**
 * The user's grants at the clients in `scope` whose access tokens may still be live, each with
 * when its last one ends (its last issue plus its client's access-token lifetime), whether it
 * still has a live refresh token, and whether it is a self-contained grant (its refresh tokens
 * checked at the client's Durable Object alone).
 */
export function findUserGrants(db: Database, userId: number, scope: ClientScope, now: number) {
  const liveUntil = sql<number>`max(${lastIssue(now)} + ${clients.accessTokenLifetime})`;
  const refreshable = sql<number>`max(${refreshTokens.revoked} IS NULL AND ${refreshTokens.expires} > ${now})`;
  const selfContained = sql<number>`max(${isSelfContainedGrant})`;
  return db
    .select({ grant: refreshTokens.family, clientId: refreshTokens.clientId, liveUntil, refreshable, selfContained })
    .from(refreshTokens)
    .innerJoin(clients, eq(clients.id, refreshTokens.clientId))
    .where(and(eq(refreshTokens.userId, userId), inClientScope(db, refreshTokens.clientId, scope)))
    .groupBy(refreshTokens.family, refreshTokens.clientId)
    .having(gt(liveUntil, now));
}

/**
 * Revokes the user's refresh tokens at the clients in `scope`: every grant-row one, and the
 * self-contained grants `ended` lists, which the sign-out listed at their Durable Objects. A
 * self-contained grant started since the sign-out read the grants (a sign-in racing it) is left as
 * it is, never ended in D1 alone where its tokens would not see it; the sign-out job's next run
 * ends it when the user was refused (oauth/sign-out.ts).
 */
export function revokeUserRefreshTokens(
  db: Database,
  userId: number,
  scope: ClientScope,
  now: number,
  ended: readonly string[],
) {
  return db
    .update(refreshTokens)
    .set({ revoked: now })
    .where(
      and(
        eq(refreshTokens.userId, userId),
        isNull(refreshTokens.revoked),
        inClientScope(db, refreshTokens.clientId, scope),
        or(sql`NOT ${isSelfContainedGrant}`, inArray(refreshTokens.family, jsonValues(ended))),
      ),
    );
}

/**
 * Who hears that the user was signed out (back-channel logout): the clients in `scope` that hold a
 * live refresh token of the user, with the session (`sid`) it came from if any, and those that
 * received an ID token in one of the sessions `sids` that end with it; by the user's index.
 */
export function userBackchannelClients(db: Database, userId: number, scope: ClientScope, sids: string[], now: number) {
  return backchannelTargets(db).where(
    and(
      eq(refreshTokens.userId, userId),
      isNotNull(clients.backchannelLogoutUri),
      or(
        and(
          isNull(refreshTokens.revoked),
          gt(refreshTokens.expires, now),
          inClientScope(db, refreshTokens.clientId, scope),
        ),
        sids.length === 0 ? undefined : inArray(refreshTokens.sid, sids),
      ),
    ),
  );
}

export async function findUserBackchannelClients(
  db: Database,
  userId: number,
  scope: ClientScope,
  sids: string[],
  now: number,
) {
  const rows = await userBackchannelClients(db, userId, scope, sids, now).all();
  return rows.map(({ uri, ...row }) => ({ ...row, uri: uri! }));
}
