import { and, eq, getTableColumns, inArray, type SQL, sql } from "drizzle-orm";
import { emailLookupKey } from "../../schemas/email-address";
import type { SignUpProfile } from "../../schemas/sign-up";
import type { Database } from "../client";
import { type ClientScope, inClientScope } from "./clients";
import {
  REFUSED_USER_STATUSES,
  type StoredUserParts,
  totpFactors,
  userAccounts,
  userAddresses,
  userClients,
  userEmails,
  userPhoneNumbers,
  users,
} from "../schema";

export type UserRecord = typeof users.$inferSelect;

/** A user with everything the User object shows. */
export type UserProfile = {
  user: UserRecord;
  emails: (typeof userEmails.$inferSelect)[];
  phoneNumbers: (typeof userPhoneNumbers.$inferSelect)[];
  addresses: (typeof userAddresses.$inferSelect)[];
  accounts: (typeof userAccounts.$inferSelect)[];
  /** The clients the user is connected to, with their merchants. */
  connections: { clientId: string; merchantId: number }[];
};

/** A user signing in, and whether the user has a second factor to give next. */
export type SignInUser = UserRecord & { secondFactor: boolean };

/** The user who owns an e-mail address (primary or not), for password sign-in. */
export async function findUserByEmail(db: Database, email: string): Promise<SignInUser | undefined> {
  const row = await db
    .select({ user: users, factor: totpFactors.userId })
    .from(userEmails)
    .innerJoin(users, eq(users.id, userEmails.userId))
    .leftJoin(totpFactors, eq(totpFactors.userId, users.id))
    .where(eq(userEmails.value, emailLookupKey(email)))
    .get();
  return row && { ...row.user, secondFactor: row.factor !== null };
}

/** The user who owns an e-mail address, and whether it is the user's primary address and verified. */
export type AddressOwner = {
  user: UserRecord;
  primary: boolean;
  verified: boolean;
  /** Whether the user has a second factor, which a sign-in then takes. */
  secondFactor: boolean;
};

export async function findAddressOwner(db: Database, email: string): Promise<AddressOwner | undefined> {
  const row = await db
    .select({ user: users, primary: userEmails.primary, verified: userEmails.verified, factor: totpFactors.userId })
    .from(userEmails)
    .innerJoin(users, eq(users.id, userEmails.userId))
    .leftJoin(totpFactors, eq(totpFactors.userId, users.id))
    .where(eq(userEmails.value, emailLookupKey(email)))
    .get();
  if (!row) return undefined;
  const { factor, ...owner } = row;
  return { ...owner, secondFactor: factor !== null };
}

/** The primary e-mail addresses of users, by id; users without one, or unknown, are left out. */
export async function findPrimaryEmails(db: Database, userIds: number[]): Promise<Map<number, string>> {
  const rows = await db.select({ id: users.id, email: users.email }).from(users).where(inArray(users.id, userIds));
  return new Map(rows.flatMap(({ id, email }) => (email === null ? [] : [[id, email] as const])));
}

/** The user's status and uuid, or undefined when there is no such user. */
export async function findUserStatusAndUuid(db: Database, userId: number) {
  return db.select({ status: users.status, uuid: users.uuid }).from(users).where(eq(users.id, userId)).get();
}

/** Why the user may not sign in (`inactive`, `blocked`, `deleted`; a missing user is deleted), or undefined. */
export async function findUserRefusal(db: Database, userId: number): Promise<string | undefined> {
  return refusalOf((await findUserStatusAndUuid(db, userId))?.status);
}

/** Why a user of `status` may not sign in; a missing status (no such user) is `deleted`. */
export function refusalOf(status: number | null | undefined): string | undefined {
  return status === undefined || status === null ? "deleted" : REFUSED_USER_STATUSES[status];
}

export async function findUserIdByUuid(db: Database, uuid: string): Promise<number | undefined> {
  const row = await db.select({ id: users.id }).from(users).where(eq(users.uuid, uuid)).get();
  return row?.id;
}

export async function isConnected(db: Database, clientId: string, userId: number): Promise<boolean> {
  const row = await db
    .select({ userId: userClients.userId })
    .from(userClients)
    .where(and(eq(userClients.clientId, clientId), eq(userClients.userId, userId)))
    .get();
  return row !== undefined;
}

/** Whether the user is connected to any client of the merchant, by the merchant's index. */
export async function isConnectedToMerchant(db: Database, merchantId: number, userId: number): Promise<boolean> {
  const row = await db
    .select({ userId: userClients.userId })
    .from(userClients)
    .where(and(eq(userClients.merchantId, merchantId), eq(userClients.userId, userId)))
    .limit(1)
    .get();
  return row !== undefined;
}

/** Connects a user to a client (and so to its merchant); a no-op when already connected. */
export function connectUser(
  db: Database,
  connection: { clientId: string; userId: number | SQL<number>; merchantId: number },
) {
  return db.insert(userClients).values(connection).onConflictDoNothing();
}

/**
 * The statements that make a new, unverified user (status 0) out of an address that signed in by
 * link: the address, verified (the link proved it), as the primary one. Later statements of the
 * same batch name the user by `uuid` (newUserId), as its id is the database's to choose; the
 * first statement returns it.
 */
export function insertSignedInUser(
  db: Database,
  user: { uuid: string; email: string; now: number; profile: SignUpProfile },
) {
  const { givenName, familyName, displayName, birthday, gender } = user.profile;
  return [
    db
      .insert(users)
      .values({
        uuid: user.uuid,
        givenName,
        familyName,
        displayName,
        ...(birthday !== undefined && { birthday }),
        ...(gender !== undefined && { gender }),
        status: 0,
        email: user.email,
        emailVerified: user.now,
        published: user.now,
        updated: user.now,
        lastLoggedIn: user.now,
        lastAuthenticated: user.now,
      })
      .returning({ id: users.id }),
    db.insert(userEmails).values({ userId: newUserId(user.uuid), value: user.email, primary: true, verified: true }),
  ] as const;
}

/** The id of the user just inserted with `uuid`, for statements in the same batch. */
export function newUserId(uuid: string) {
  return sql<number>`(SELECT ${users.id} FROM ${users} WHERE ${users.uuid} = ${uuid})`;
}

/**
 * The user's addresses that are neither primary nor verified (an earlier change's, never
 * confirmed) go, but `keep`: only the newest change waits for its confirmation.
 */
export function dropUnconfirmedEmails(db: Database, userId: number, keep: string) {
  return db
    .delete(userEmails)
    .where(
      and(
        eq(userEmails.userId, userId),
        eq(userEmails.primary, false),
        eq(userEmails.verified, false),
        sql`${userEmails.value} <> ${keep}`,
      ),
    );
}

/** A new address of the user's, neither primary nor verified until its confirmation link is used. */
export function addUnverifiedEmail(db: Database, userId: number, email: string) {
  return db.insert(userEmails).values({ userId, value: email, primary: false, verified: false });
}

/**
 * The address becomes the user's primary one; the old primary stays as a secondary address, so a
 * mistaken change locks nobody out. Written only while the address is still the user's and the
 * user is not blocked, inactive or deleted (checked again at write time). For the batch that
 * verifies it, or with `verified` for an address the user proved before.
 */
export function makePrimaryEmail(db: Database, userId: number, email: string, now: number, verified = false) {
  const stillTheirs = and(
    sql`EXISTS (SELECT 1 FROM ${userEmails} WHERE ${userEmails.userId} = ${userId} AND ${userEmails.value} = ${email})`,
    sql`(SELECT ${users.status} FROM ${users} WHERE ${users.id} = ${userId}) >= 0`,
  );
  return [
    db
      .update(userEmails)
      .set({ primary: sql`${userEmails.value} = ${email}` })
      .where(and(eq(userEmails.userId, userId), stillTheirs)),
    db
      .update(users)
      .set({ email, updated: now, ...(verified && { emailVerified: now }) })
      .where(and(eq(users.id, userId), stillTheirs)),
  ] as const;
}

/** A link to the address proved it: the address is verified, and the sign-in recorded. */
export function recordLinkSignIn(db: Database, userId: number, email: string, now: number) {
  return [
    db
      .update(userEmails)
      .set({ verified: true })
      .where(and(eq(userEmails.userId, userId), eq(userEmails.value, email))),
    db
      .update(users)
      .set({
        emailVerified: sql`CASE WHEN ${users.email} = ${email} THEN ${now} ELSE ${users.emailVerified} END`,
        lastLoggedIn: now,
        lastAuthenticated: now,
      })
      .where(eq(users.id, userId)),
  ] as const;
}

export function recordSignIn(db: Database, userId: number, now: number) {
  return db.update(users).set({ lastAuthenticated: now, lastLoggedIn: now }).where(eq(users.id, userId));
}

/** Most parameters D1 binds in one statement. */
const MAX_BOUND_PARAMETERS = 100;

/**
 * The users and all of their parts, in the order asked for; unknown ids are left out. One
 * statement reads each user's row, which carries a copy of its parts (`users.parts`, kept by
 * triggers): two rows read a user. A user not copied yet (from before migration 0031, until the
 * retention job reaches it) has its parts read from their tables, in a second round trip.
 */
export async function findUserProfiles(db: Database, userIds: number[]): Promise<UserProfile[]> {
  if (userIds.length === 0) return [];
  // A batch of one: D1 reports its rows read (Server-Timing) only for a batch's statements.
  const [found] = await db.batch([
    db
      .select()
      .from(users)
      .where(inArray(users.id, userIds.length <= MAX_BOUND_PARAMETERS ? userIds : jsonValues(userIds))),
  ]);
  const byId = new Map(found.map((user) => [user.id, user]));
  return profilesOf(
    db,
    userIds.flatMap((id) => byId.get(id) ?? []),
  );
}

/**
 * The profiles of users whose rows were read, in their order: from each row's copy of its parts,
 * or, for users not copied yet, from the parts' tables (one more round trip).
 */
export async function profilesOf(db: Database, records: UserRecord[]): Promise<UserProfile[]> {
  const uncopied = records.filter((user) => user.parts === null).map((user) => user.id);
  const read = uncopied.length > 0 ? await readParts(db, uncopied) : new Map<number, UserParts>();
  return records.map((user) => ({
    user,
    ...(user.parts === null ? (read.get(user.id) ?? NO_PARTS) : copiedParts(user.id, user.parts)),
  }));
}

const USER_COLUMN_LIST = Object.entries(getTableColumns(users));

/**
 * Every column of `users` as one JSON array, for a statement that reads whole users beside other
 * values: one value a row for D1 to hand over (`userRecordFrom` reads it).
 */
export const userRowArray = sql`json_array(${sql.join(
  USER_COLUMN_LIST.map(([, column]) => sql`${column}`),
  sql`, `,
)})`;

/** The user's row from the text of `userRowArray`, as drizzle would read it. */
export function userRecordFrom(rowArray: string): UserRecord {
  const values = JSON.parse(rowArray) as unknown[];
  const record: Record<string, unknown> = {};
  USER_COLUMN_LIST.forEach(([key, column], i) => {
    const value = values[i];
    record[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
  });
  return record as UserRecord;
}

type UserParts = Omit<UserProfile, "user">;

const NO_PARTS: UserParts = { emails: [], phoneNumbers: [], addresses: [], accounts: [], connections: [] };

/** A user's parts as `users.parts` holds them, in the shape their tables' rows have. */
export function copiedParts(userId: number, parts: StoredUserParts): UserParts {
  const flagged = <Row extends { primary: 0 | 1; verified: 0 | 1 }>(row: Row) => ({
    ...row,
    userId,
    primary: row.primary === 1,
    verified: row.verified === 1,
  });
  return {
    emails: parts.emails.map(flagged),
    phoneNumbers: parts.phoneNumbers.map(flagged),
    addresses: parts.addresses.map((row) => ({ ...row, userId })),
    accounts: parts.accounts.map((row) => ({ ...row, userId })),
    connections: parts.connections,
  };
}

/**
 * Values as one bound parameter, however many there are (D1 binds at most MAX_BOUND_PARAMETERS a
 * statement): `column IN ${jsonValues(values)}`. Each value costs a row read of its own.
 */
export const jsonValues = (values: readonly unknown[]) => sql`(SELECT value FROM json_each(${JSON.stringify(values)}))`;

/** The parts of users not copied into their rows yet, from the parts' own tables: one round trip. */
async function readParts(db: Database, userIds: number[]): Promise<Map<number, UserParts>> {
  const ids = jsonValues(userIds);
  const [emails, phoneNumbers, addresses, accounts, connections] = await db.batch([
    // Each part in the order the copy keeps (its user_id index's, no sort).
    db.select().from(userEmails).where(inArray(userEmails.userId, ids)).orderBy(userEmails.userId, userEmails.id),
    db
      .select()
      .from(userPhoneNumbers)
      .where(inArray(userPhoneNumbers.userId, ids))
      .orderBy(userPhoneNumbers.userId, userPhoneNumbers.id),
    db
      .select()
      .from(userAddresses)
      .where(inArray(userAddresses.userId, ids))
      .orderBy(userAddresses.userId, userAddresses.type, userAddresses.id),
    db
      .select()
      .from(userAccounts)
      .where(inArray(userAccounts.userId, ids))
      .orderBy(userAccounts.userId, userAccounts.id),
    db
      .select({ userId: userClients.userId, clientId: userClients.clientId, merchantId: userClients.merchantId })
      .from(userClients)
      .where(inArray(userClients.userId, ids))
      .orderBy(userClients.userId, userClients.merchantId, userClients.clientId),
  ]);
  const byUser = <Row extends { userId: number }>(rows: Row[]) => Map.groupBy(rows, (row) => row.userId);
  const parts = {
    emails: byUser(emails),
    phoneNumbers: byUser(phoneNumbers),
    addresses: byUser(addresses),
    accounts: byUser(accounts),
    connections: byUser(connections),
  };
  return new Map(
    userIds.map((id) => [
      id,
      {
        emails: parts.emails.get(id) ?? [],
        phoneNumbers: parts.phoneNumbers.get(id) ?? [],
        addresses: parts.addresses.get(id) ?? [],
        accounts: parts.accounts.get(id) ?? [],
        connections: (parts.connections.get(id) ?? []).map(({ clientId, merchantId }) => ({ clientId, merchantId })),
      },
    ]),
  );
}

export function updateUserStatus(db: Database, userId: number, status: number, now: number) {
  return db.update(users).set({ status, updated: now }).where(eq(users.id, userId));
}

/** Withdraws the user's connection (consent) to the clients in `scope`. */
export function disconnectUser(db: Database, userId: number, scope: ClientScope) {
  return db
    .delete(userClients)
    .where(and(eq(userClients.userId, userId), inClientScope(db, userClients.clientId, scope)));
}

/** The user's new password (its hash, security/password.ts). */
export function setPasswordHash(db: Database, userId: number, passwordHash: string) {
  return db.update(users).set({ passwordHash }).where(eq(users.id, userId));
}
