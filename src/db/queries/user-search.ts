/**
 * The users a client (or its merchant) may see, searched and paged for `GET /api/2/users`. Two
 * shapes, so that the work is bounded by the page rather than by the client's users:
 *
 * - Narrowed by a criterion with an index (ids, e-mails, phone number, names): the matching users
 *   are found by that index, checked for a connection to the client, and sorted.
 * - Otherwise the client's connections are walked in the asked-for order: one index range per
 *   wanted status (user_clients carries copies of each user's status and times), each cut at the
 *   end of the page, merged.
 *
 * Criteria no index answers (regular expressions, name prefixes, gender, locale, utcOffset) are
 * the caller's to check, on rows of a bounded scan that carry the `properties` it names.
 */
import { type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import type { Database } from "../client";
import { userClients, userEmails, users } from "../schema";
import type { Page } from "./page";
import { jsonValues, type UserRecord, userRecordFrom, userRowArray } from "./users";

export type UserSort = "userId" | "published" | "updated";
export type NameProperty = "familyName" | "givenName" | "displayName" | "preferredUsername";
/** Text properties a found row can carry along, for checks no index answers. */
export type TextProperty =
  NameProperty | "id" | "uuid" | "email" | "emails" | "phoneNumber" | "gender" | "locale" | "utcOffset";

export type UserSearch = Page<UserSort> & {
  scope: { clientId: string } | { merchantId: number };
  statuses: number[];
  /** Which time `since` and `until` bound. */
  timeColumn: "published" | "updated";
  legacyIds?: string[] | undefined;
  userIds?: number[] | undefined;
  uuids?: string[] | undefined;
  /** Primary e-mail addresses, canonical. */
  emails?: string[] | undefined;
  /** Any of a user's e-mail addresses, canonical. */
  anyEmails?: string[] | undefined;
  phoneNumbers?: string[] | undefined;
  /** Folded names (db/search-key.ts), OR-ed. */
  names: Partial<Record<NameProperty, string[]>>;
  /** Text properties each found row carries, for the caller's own checks. */
  properties: TextProperty[];
};

export type FoundUser = { userId: number } & Partial<Record<TextProperty, string | null>>;

/**
 * What a found row carries: the asked-for text properties, the user's whole row (with its copy of
 * its parts: a page and its User objects in one statement), or the user's version alone.
 */
type Carried = "properties" | "row" | "version";

const NAME_KEY_COLUMNS: Record<NameProperty, SQLiteColumn> = {
  familyName: users.familyNameKey,
  givenName: users.givenNameKey,
  displayName: users.displayNameKey,
  preferredUsername: users.preferredUsernameKey,
};

const PROPERTY_VALUES: Record<TextProperty, SQL> = {
  id: sql`${users.legacyId}`,
  uuid: sql`${users.uuid}`,
  email: sql`${users.email}`,
  emails: sql`(SELECT json_group_array(${userEmails.value}) FROM ${userEmails} WHERE ${userEmails.userId} = ${users.id})`,
  phoneNumber: sql`${users.phoneNumber}`,
  familyName: sql`${users.familyName}`,
  givenName: sql`${users.givenName}`,
  displayName: sql`${users.displayName}`,
  preferredUsername: sql`${users.preferredUsername}`,
  gender: sql`${users.gender}`,
  locale: sql`${users.locale}`,
  utcOffset: sql`${users.utcOffset}`,
};

/** One value is compared directly: a list costs a row read for each of its values, and another to look each up. */
const anyOf = (column: SQL | SQLiteColumn, values: readonly unknown[] | undefined) =>
  values === undefined
    ? undefined
    : values.length === 1
      ? sql`${column} = ${values[0]}`
      : sql`${column} IN ${jsonValues(values)}`;

/**
 * A primary e-mail address: one is found by the service-wide unique index of addresses (one user
 * at most, so nothing to sort: three rows read with the client's connection), and must be the
 * user's primary one; several, by the users' own index.
 */
function primaryEmail(emails: readonly string[] | undefined): SQL | undefined {
  if (emails?.length !== 1) return anyOf(users.email, emails);
  const [email] = emails;
  return sql`${users.id} = (SELECT ${userEmails.userId} FROM ${userEmails} WHERE ${userEmails.value} = ${email}) AND ${users.email} = ${email}`;
}

/** Criteria that an index serves; any of them makes a search narrowed. */
function indexedCriteria(search: UserSearch): SQL[] {
  const conditions = [
    anyOf(users.legacyId, search.legacyIds),
    anyOf(users.id, search.userIds),
    anyOf(users.uuid, search.uuids),
    primaryEmail(search.emails),
    search.anyEmails &&
      sql`${users.id} IN (SELECT ${userEmails.userId} FROM ${userEmails} WHERE ${anyOf(userEmails.value, search.anyEmails)})`,
    anyOf(users.phoneNumber, search.phoneNumbers),
    ...Object.entries(search.names).map(([property, keys]) => anyOf(NAME_KEY_COLUMNS[property as NameProperty], keys)),
  ];
  return conditions.filter((condition) => condition !== undefined);
}

function withinTime(column: SQL | SQLiteColumn, search: UserSearch): SQL[] {
  return [
    ...(search.since === null ? [] : [sql`${column} >= ${search.since}`]),
    ...(search.until === null ? [] : [sql`${column} <= ${search.until}`]),
  ];
}

const and = (conditions: SQL[]) => sql.join(conditions, sql` AND `);
const direction = (search: UserSearch) => sql.raw(search.sort[0]?.direction === "desc" ? "DESC" : "ASC");

function selectCarried(search: UserSearch, carried: Carried): SQL {
  if (carried === "row") return sql`, ${userRowArray} AS "user"`;
  if (carried === "version") return sql`, ${users.version} AS "version"`;
  return sql.join(
    search.properties.map((property) => sql`, ${PROPERTY_VALUES[property]} AS ${sql.identifier(property)}`),
    sql``,
  );
}

/** Narrowed: found by the criterion's index, then checked, sorted and cut. */
function narrowedQuery(search: UserSearch, rows: { limit: number; offset: number }, carried: Carried): SQL {
  const { scope } = search;
  const connected =
    "clientId" in scope
      ? sql`EXISTS (SELECT 1 FROM ${userClients} WHERE ${userClients.clientId} = ${scope.clientId} AND ${userClients.userId} = ${users.id})`
      : sql`EXISTS (SELECT 1 FROM ${userClients} WHERE ${userClients.merchantId} = ${scope.merchantId} AND ${userClients.userId} = ${users.id})`;
  // `+column`: these must not pick the index, the criteria should.
  const sortColumn = {
    userId: sql`+${users.id}`,
    published: sql`+${users.published}`,
    updated: sql`+${users.updated}`,
  }[search.sort[0]?.property ?? "userId"];
  const conditions = [
    ...indexedCriteria(search),
    // A few statuses, each compared: a list would cost rows read of its own.
    sql`(${sql.join(
      search.statuses.map((status) => sql`+${users.status} = ${status}`),
      sql` OR `,
    )})`,
    ...withinTime(sql`+${users[search.timeColumn]}`, search),
    connected,
  ];
  const dir = direction(search);
  // Versions are packed into one value (findUserVersions), in no order SQL promises: with the sort
  // value, the Worker puts them back in the page's.
  const sortValue = carried === "version" ? sql`, ${sortColumn} AS "sortValue"` : sql``;
  return sql`SELECT ${users.id} AS "userId"${sortValue}${selectCarried(search, carried)} FROM ${users} WHERE ${and(conditions)} ORDER BY ${sortColumn} ${dir}, +${users.id} ${dir} LIMIT ${rows.limit} OFFSET ${rows.offset}`;
}

/** Not narrowed: the scope's connections in order, one index range per status, merged. */
function scopeQuery(search: UserSearch, rows: { limit: number; offset: number }, carried: Carried): SQL {
  const { scope } = search;
  const inScope =
    "clientId" in scope
      ? sql`${userClients.clientId} = ${scope.clientId}`
      : sql`${userClients.merchantId} = ${scope.merchantId}`;
  const sort = search.sort[0]?.property ?? "userId";
  const sortColumn = { userId: userClients.userId, published: userClients.published, updated: userClients.updated }[
    sort
  ];
  // Named, as without table statistics SQLite prefers the primary key (the client's users in id
  // order) and would filter by status on the way, reading far past the page for a rare status.
  const index = `user_clients_${"clientId" in scope ? "client" : "merchant"}_status_${sort === "userId" ? "user" : sort}_idx`;
  // A user connected to several clients of the merchant has one connection to each.
  const distinct = "clientId" in scope ? sql`` : sql`DISTINCT `;
  const dir = direction(search);
  // By user id alone when that is the sort: a repeated term costs a sort of its own.
  const rangeOrder =
    sort === "userId" ? sql`${userClients.userId} ${dir}` : sql`${sortColumn} ${dir}, ${userClients.userId} ${dir}`;
  const perStatus = search.statuses.map((status) => {
    const conditions = [
      inScope,
      sql`${userClients.status} = ${status}`,
      ...withinTime(userClients[search.timeColumn], search),
    ];
    const range = sql`SELECT ${distinct}${userClients.userId} AS "userId", ${sortColumn} AS "sortValue" FROM ${userClients} INDEXED BY ${sql.identifier(index)} WHERE ${and(conditions)}`;
    // A merchant's walk is made distinct per status, which needs a range of its own, cut.
    return "clientId" in scope
      ? range
      : sql`SELECT * FROM (${range} ORDER BY ${rangeOrder} LIMIT ${rows.offset + rows.limit})`;
  });
  const merged = sql.join(perStatus, sql` UNION ALL `);
  const pageOrder =
    sort === "userId" ? sql`"merged"."userId" ${dir}` : sql`"merged"."sortValue" ${dir}, "merged"."userId" ${dir}`;
  const page = sql`SELECT "merged"."userId" AS "userId", "merged"."sortValue" AS "sortValue" FROM (${merged}) AS "merged" ORDER BY ${pageOrder} LIMIT ${rows.limit} OFFSET ${rows.offset}`;
  // The page is cut first, so that only its own users' rows are read; it is put back in order
  // after the join (inPageOrder), which sorting again here would cost a row read a user.
  return sql`SELECT "page"."userId" AS "userId", "page"."sortValue" AS "sortValue"${selectCarried(search, carried)} FROM (${page}) AS "page" CROSS JOIN ${users} ON ${users.id} = "page"."userId"`;
}

/**
 * Rows in the page's order: by their sort value, then by user id. Rows without one (a narrowed
 * query's, but for its versions) come in order already.
 */
function inPageOrder<Row extends { userId: number; sortValue?: number }>(rows: Row[], search: UserSearch): Row[] {
  if (rows[0]?.sortValue === undefined) return rows;
  const sign = search.sort[0]?.direction === "desc" ? -1 : 1;
  return rows.sort((a, b) => sign * (a.sortValue! - b.sortValue! || a.userId - b.userId));
}

/**
 * The ids of the users on the page (in order), each with the asked-for text properties. `rows`
 * overrides the page's own limit and offset, for a scan that filters further.
 */
export async function findUsers(db: Database, search: UserSearch, rows: { limit: number; offset: number } = search) {
  return inPageOrder(await userSearchStatement<FoundUser>(db, search, rows, "properties"), search);
}

/** The page's users in order, each with its whole row: one statement. */
export async function findUserRows(db: Database, search: UserSearch): Promise<{ userId: number; user: UserRecord }[]> {
  const rows = await userSearchStatement<FoundUser & { user: string }>(db, search, search, "row");
  return inPageOrder(rows, search).map(({ userId, user }) => ({ userId, user: userRecordFrom(user) }));
}

/**
 * The page's users in order, each with its version alone, packed by D1 into one value: one
 * statement whose answer is one row, not one a user, which costs D1 and the Worker far less to
 * send and read (docs/edge.md "A User object is one row"). A page holds at most 1,000 users of
 * three numbers each, far below D1's limit on a value.
 */
export async function findUserVersions(
  db: Database,
  search: UserSearch,
): Promise<{ userId: number; version: number }[]> {
  const [packed] = await userVersionsStatement(db, search);
  const rows = (JSON.parse(packed!.page) as [number, number, number][]).map(([userId, sortValue, version]) => ({
    userId,
    sortValue,
    version,
  }));
  return inPageOrder(rows, search).map(({ userId, version }) => ({ userId, version }));
}

/** findUserVersions' statement: the page's users, each `[userId, sortValue, version]`, in one JSON array. */
export function userVersionsStatement(db: Database, search: UserSearch) {
  const page = userSearchQuery(search, search, "version");
  return db.all<{ page: string }>(
    sql`SELECT json_group_array(json_array("userId", "sortValue", "version")) AS "page" FROM (${page})`,
  );
}

/** A search's statement, carrying `carried` on each row (in page order once `inPageOrder` has them). */
export function userSearchStatement<Row extends FoundUser>(
  db: Database,
  search: UserSearch,
  rows: { limit: number; offset: number },
  carried: Carried,
) {
  return db.all<Row & { sortValue?: number }>(userSearchQuery(search, rows, carried));
}

function userSearchQuery(search: UserSearch, rows: { limit: number; offset: number }, carried: Carried): SQL {
  const narrowed = indexedCriteria(search).length > 0;
  return narrowed ? narrowedQuery(search, rows, carried) : scopeQuery(search, rows, carried);
}
