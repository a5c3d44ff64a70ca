/**
 * What a data-protection key rotation re-seals, and what still depends on the previous key
 * (docs/operations.md "Rotating the data-protection key"). A value stored under the current key
 * starts with its key id and a dot (security/data-protection.ts); anything else is under the
 * previous key. These reads scan the live rows once per `npm run reseal` round: an operator's
 * command, never a request path.
 */
import { and, count, eq, gt, isNotNull, isNull, lt, max, ne, or, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import type { Database } from "../client";
import { clients, idempotencyKeys, refreshTokens, sessions, totpFactors } from "../schema";
import { REFRESH_TOKEN_LIFETIME } from "../../oauth/refresh-tokens";
import { isSelfContainedGrant } from "./refresh-tokens";

/** Whether a stored value is under another key than the one `tag` (`<key id>.`) names. */
const notUnder = (column: SQLiteColumn, tag: string): SQL =>
  and(isNotNull(column), ne(sql`substr(${column}, 1, ${tag.length})`, tag))!;

export type SealedClient = {
  id: string;
  signingSecretSealed: string | null;
  previousSigningSecretSealed: string | null;
  previousSigningSecretExpires: number | null;
};

/** A client's signing secret, or its previous one while that still signs, sealed under another key. */
const sealedUnderOtherKeys = (tag: string, now: number) =>
  or(
    notUnder(clients.signingSecretSealed, tag),
    and(gt(clients.previousSigningSecretExpires, now), notUnder(clients.previousSigningSecretSealed, tag)),
  );

/** Up to `limit` clients with a signing secret (or a live previous one) sealed under another key, after `after`. */
export function clientsSealedUnderOtherKeys(
  db: Database,
  tag: string,
  now: number,
  after: string,
  limit: number,
): Promise<SealedClient[]> {
  return db
    .select({
      id: clients.id,
      signingSecretSealed: clients.signingSecretSealed,
      previousSigningSecretSealed: clients.previousSigningSecretSealed,
      previousSigningSecretExpires: clients.previousSigningSecretExpires,
    })
    .from(clients)
    .where(and(sealedUnderOtherKeys(tag, now), gt(clients.id, after)))
    .orderBy(clients.id)
    .limit(limit);
}

/** Public clients whose secret hash (of a secret nobody knows) is under another key. */
export function publicClientsUnderOtherKeys(db: Database, tag: string, limit: number) {
  return db
    .select({ id: clients.id, secretHash: clients.secretHash })
    .from(clients)
    .where(and(eq(clients.publicClient, true), notUnder(clients.secretHash, tag)))
    .limit(limit);
}

type ReplacedValues = Partial<
  Pick<typeof clients.$inferInsert, "signingSecretSealed" | "previousSigningSecretSealed" | "secretHash">
>;

/** Replaces a client's sealed or hashed values by `values`, unless one of them changed since `was`. */
export function replaceClientValues(db: Database, id: string, was: ReplacedValues, values: ReplacedValues) {
  const unchanged = Object.entries(was).map(([name, value]) => {
    const column = clients[name as keyof ReplacedValues];
    return value == null ? isNull(column) : eq(column, value);
  });
  return db
    .update(clients)
    .set(values)
    .where(and(eq(clients.id, id), ...unchanged));
}

/** Up to `limit` authenticator secrets sealed under another key, of users after `after`. */
export function totpSecretsUnderOtherKeys(db: Database, tag: string, after: number, limit: number) {
  return db
    .select({ userId: totpFactors.userId, secretSealed: totpFactors.secretSealed })
    .from(totpFactors)
    .where(and(notUnder(totpFactors.secretSealed, tag), gt(totpFactors.userId, after)))
    .orderBy(totpFactors.userId)
    .limit(limit);
}

/** Replaces a user's sealed authenticator secret, unless it changed since `was`. */
export function replaceTotpSecret(db: Database, userId: number, was: string, secretSealed: string) {
  return db
    .update(totpFactors)
    .set({ secretSealed })
    .where(and(eq(totpFactors.userId, userId), eq(totpFactors.secretSealed, was)));
}

/** What still depends on the previous key, now. */
export async function previousKeyDependencies(db: Database, tag: string, now: number, since: number, keptFor: number) {
  const selfContainedUntil = since + REFRESH_TOKEN_LIFETIME;
  /** Until when a live token of the row may be under the previous key. */
  const tokenEnd = sql`CASE WHEN ${isSelfContainedGrant} THEN min(${refreshTokens.expires}, ${selfContainedUntil}) ELSE ${refreshTokens.expires} END`;
  const [sealed, totp, hashed, liveSessions, liveTokens, kept] = await db.batch([
    db.select({ count: count() }).from(clients).where(sealedUnderOtherKeys(tag, now)),
    db.select({ count: count() }).from(totpFactors).where(notUnder(totpFactors.secretSealed, tag)),
    db
      .select({ id: clients.id })
      .from(clients)
      .where(
        or(
          notUnder(clients.secretHash, tag),
          and(gt(clients.previousSecretExpires, now), notUnder(clients.previousSecretHash, tag)),
          notUnder(clients.registrationTokenHash, tag),
        ),
      )
      .orderBy(clients.id),
    db
      .select({ count: count(), until: max(sessions.expires) })
      .from(sessions)
      .where(and(isNull(sessions.revoked), gt(sessions.expires, now), notUnder(sessions.idHash, tag))),
    db
      .select({
        count: count(),
        until: sql<number | null>`max(${tokenEnd})`,
      })
      .from(refreshTokens)
      .where(
        and(
          isNull(refreshTokens.revoked),
          gt(refreshTokens.expires, now),
          // A grant's own record (`grant:<family>`) is no token.
          sql`${refreshTokens.tokenHash} NOT LIKE 'grant:%'`,
          or(
            // A grant rotated in place (`rt:<locator>`) keeps its current token's hash beside.
            and(sql`${refreshTokens.tokenHash} LIKE 'rt:%'`, notUnder(refreshTokens.secretHash, tag)),
            // A self-contained grant's tokens carry their MAC, made under the key current at each
            // refresh: one started before `since` (the switch margin's end, until which isolates
            // on the previous key alone may still make one) may hold such a token for 30 days more.
            and(isSelfContainedGrant, lt(refreshTokens.created, since), sql`${selfContainedUntil} > ${now}`),
            and(
              sql`${refreshTokens.tokenHash} NOT LIKE 'rt:%'`,
              sql`NOT ${isSelfContainedGrant}`,
              notUnder(refreshTokens.tokenHash, tag),
            ),
          ),
        ),
      ),
    // Only the records of a rotation or a client's creation keep a sealed secret (after a space).
    db
      .select({ count: count(), until: max(idempotencyKeys.created) })
      .from(idempotencyKeys)
      .where(
        and(
          sql`${idempotencyKeys.created} <= ${since}`,
          gt(idempotencyKeys.created, now - keptFor),
          sql`instr(${idempotencyKeys.resource}, ' ') > 0`,
        ),
      ),
  ]);
  return {
    signingSecrets: sealed[0]!.count,
    totpSecrets: totp[0]!.count,
    clients: hashed.map((row) => row.id),
    sessions: liveSessions[0]!,
    refreshTokens: liveTokens[0]!,
    idempotencyKeys: { count: kept[0]!.count, until: kept[0]!.until === null ? null : kept[0]!.until + keptFor },
  };
}
