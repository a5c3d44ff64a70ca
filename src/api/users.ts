/**
 * GET /api/2/users: search the users the calling client may see. Server token. Every criterion
 * is a user property, criteria AND-ed, a criterion's values OR-ed; exact, fuzzy (names) or a
 * regular expression, `/pattern/flags` (docs/api.md "Users").
 */
import { Hono } from "hono";
import { RE2JS } from "re2js";
import * as z from "zod/mini";
import { readUserProfiles, readUserSearch, type UserSearchResult } from "../db/cached-reads";
import type { Database } from "../db/client";
import {
  findUserRows,
  findUsers,
  findUserVersions,
  type FoundUser,
  type NameProperty,
  type TextProperty,
  type UserSearch,
  type UserSort,
} from "../db/queries/user-search";
import { profilesOf, type UserProfile } from "../db/queries/users";
import { searchKey } from "../db/search-key";
import type { AppEnv } from "../env";
import { ApiError } from "../errors";
import { describeRoute } from "../http/container";
import { nowInSeconds } from "../http/datetime";
import {
  integerValues,
  invalidParameter,
  listParameters,
  type ListQuery,
  type ListSpec,
  pageOf,
  parseListQuery,
  regexLiteral,
  respondPage,
} from "../http/list-query";
import { parseUserKey } from "../http/user-key";
import { requireToken } from "../middleware/auth";
import { canonicalEmailAddress } from "../schemas/email-address";
import { limitedUserSchema, USER_FIELDS, type UserField, userSchema } from "../schemas/responses/user";
import { CLIENT_ID_PARAMETER, readableClientId } from "./client-scope";
import { limitedUserView, userView, userViewJson } from "./views/user";

/** Status filters and the user statuses they select; without any, the active ones (spec rule 1). */
const STATUS_FILTERS: Record<string, number> = { verified: 1, unverified: 0, inactive: -1, blocked: -2, deleted: -3 };
const ACTIVE = [0, 1];
/**
 * Most rows a search examines when a criterion has no index to answer it (a regular expression, a
 * name prefix, gender, locale, utcOffset); `meta.scanned` reports how many it did.
 */
const SCAN_ROWS = 5000;
const REGEX_FLAGS: Record<string, number> = { i: RE2JS.CASE_INSENSITIVE, m: RE2JS.MULTILINE, s: RE2JS.DOTALL };
const NAME_PROPERTIES: readonly NameProperty[] = ["familyName", "givenName", "displayName", "preferredUsername"];
/**
 * Criteria on what the limited view (rule 2) hides: they match only users of the client read, or
 * a search of the merchant's users would tell, one guess or pattern at a time, what the view hides.
 */
const HIDDEN_CRITERIA: readonly Criterion[] = ["email", "emails", "phoneNumber"];
/** Criteria with no index: too few distinct values for one to narrow a search. */
const UNINDEXED_CRITERIA = ["gender", "locale", "utcOffset"] as const;

type Criterion = TextProperty | "userId" | "clientId";

const USER_LIST: ListSpec<UserSort, UserField, Criterion> = {
  sorts: ["userId", "published", "updated"],
  maxSortTerms: 1,
  defaultSort: ({ filters, bounded }) =>
    filters.other.includes("updated")
      ? [{ property: "updated", direction: "desc" }]
      : [{ property: bounded ? "published" : "userId", direction: "asc" }],
  statusFilters: Object.keys(STATUS_FILTERS),
  typeFilters: [],
  otherFilters: ["updated", "merchant"],
  fields: USER_FIELDS,
  criteria: [
    "id",
    "userId",
    "uuid",
    "email",
    "emails",
    "phoneNumber",
    ...NAME_PROPERTIES,
    "gender",
    "locale",
    "utcOffset",
    "clientId",
  ],
};

type UserQuery = ListQuery<UserSort, UserField, Criterion>;

/** A criterion's values: exact ones, or one regular expression (RE2 syntax, linear time). */
function splitValues(name: Criterion, values: string[]): { exact: string[] } | { regex: RE2JS } {
  const literals = values.map(regexLiteral);
  if (literals.every((literal) => literal === null)) return { exact: values };
  const [literal] = literals;
  if (literals.length > 1 || !literal) throw invalidParameter(name);
  const flags = [...new Set(literal.flags)];
  if (flags.length !== literal.flags.length || flags.some((flag) => REGEX_FLAGS[flag] === undefined))
    throw invalidParameter(name);
  try {
    return {
      regex: RE2JS.compile(
        literal.pattern,
        flags.reduce((all, flag) => all | REGEX_FLAGS[flag]!, 0),
      ),
    };
  } catch {
    throw invalidParameter(name);
  }
}

/** Each exact value through `read`; a value it cannot read (null) is a 400 naming the criterion. */
function readEach(name: string, values: string[], read: (value: string) => string | null): string[] {
  return values.map((value) => {
    const readValue = read(value);
    if (readValue === null) throw invalidParameter(name);
    return readValue;
  });
}

/** A name criterion's folded values; `Hans*` is a prefix. */
function nameMatch(name: NameProperty, values: string[]): { keys: string[]; prefixes: string[] } {
  const match = { keys: [] as string[], prefixes: [] as string[] };
  for (const value of values) {
    const prefix = value.endsWith("*");
    const key = searchKey(prefix ? value.slice(0, -1) : value);
    if (key === "" || key.includes("*")) throw invalidParameter(name);
    (prefix ? match.prefixes : match.keys).push(key);
  }
  return match;
}

/** Criteria no index answers, checked here on the rows a bounded scan yields. */
type Checks = Partial<Record<TextProperty, (value: string) => boolean>>;
type Plan = { search: UserSearch; checks: Checks };

/** The search `query` asks for among the users of `scope`'s client (or its merchant). */
function plan(scope: { clientId: string; merchantId: number }, query: UserQuery): Plan {
  const { filters, where } = query;
  const checks: Checks = {};
  const exact: Partial<Record<Criterion, string[]>> = {};
  const { clientId: _, ...criteria } = where;
  for (const [name, values] of Object.entries(criteria) as [TextProperty | "userId", string[]][]) {
    const parsed = splitValues(name, values);
    if ("regex" in parsed) {
      if (name === "userId") throw invalidParameter(name);
      checks[name] = (value) => parsed.regex.test(value);
    } else exact[name] = parsed.exact;
  }
  const names: Partial<Record<NameProperty, string[]>> = {};
  for (const property of NAME_PROPERTIES) {
    const values = exact[property];
    if (!values) continue;
    const { keys, prefixes } = nameMatch(property, values);
    if (prefixes.length === 0) names[property] = keys;
    else {
      checks[property] = (value) => {
        const key = searchKey(value);
        return keys.includes(key) || prefixes.some((prefix) => key.startsWith(prefix));
      };
    }
  }
  for (const property of UNINDEXED_CRITERIA) {
    const values = exact[property];
    if (values) checks[property] = (value) => values.includes(value);
  }
  const search: UserSearch = {
    ...pageOf(query),
    scope:
      filters.other.includes("merchant") && !HIDDEN_CRITERIA.some((criterion) => where[criterion] !== undefined)
        ? { merchantId: scope.merchantId }
        : { clientId: scope.clientId },
    statuses: filters.status.length > 0 ? filters.status.map((filter) => STATUS_FILTERS[filter]!) : ACTIVE,
    timeColumn: filters.other.includes("updated") ? "updated" : "published",
    legacyIds: exact.id,
    userIds: integerValues("userId", exact.userId),
    uuids:
      exact.uuid &&
      readEach("uuid", exact.uuid, (value) => {
        const key = parseUserKey(value);
        return key && "uuid" in key ? key.uuid : null;
      }),
    emails: exact.email && readEach("email", exact.email, canonicalEmailAddress),
    anyEmails: exact.emails && readEach("emails", exact.emails, canonicalEmailAddress),
    phoneNumbers: exact.phoneNumber,
    names,
    properties: Object.keys(checks) as TextProperty[],
  };
  return { search, checks };
}

function matchesAll(row: FoundUser, checks: Checks): boolean {
  return Object.entries(checks).every(([property, check]) => {
    const value = row[property as TextProperty];
    if (value === null || value === undefined) return false;
    const values = property === "emails" ? (JSON.parse(value) as string[]) : [value];
    return values.some(check);
  });
}

/** The page's user ids, in order, read with their rows, whose profiles go into `loaded`. */
async function readPage(db: Database, search: UserSearch, loaded: Map<number, UserProfile>): Promise<number[]> {
  const rows = await findUserRows(db, search);
  const records = rows.map((row) => row.user);
  for (const profile of await profilesOf(db, records)) loaded.set(profile.user.id, profile);
  return rows.map((row) => row.userId);
}

/**
 * The page's user ids, in order, read with their versions alone: each `held` copy whose version is
 * still its user's goes into `loaded`; the others are left to be read by their keys
 * (readUserProfiles, with the request's bookmark).
 */
async function checkPage(
  db: Database,
  search: UserSearch,
  held: ReadonlyMap<number, UserProfile>,
  loaded: Map<number, UserProfile>,
): Promise<number[]> {
  const rows = await findUserVersions(db, search);
  for (const { userId, version } of rows) {
    const copy = held.get(userId);
    if (copy?.user.version === version) loaded.set(userId, copy);
  }
  return rows.map((row) => row.userId);
}

/**
 * The ids of the users on the page, in order, and what a bounded scan examined. A page without
 * checks of its own is read with its users' rows, or, when the isolate `held` copies of the same
 * search's last page, with their versions alone.
 */
async function searchUsers(
  db: Database,
  { search, checks }: Plan,
  held: ReadonlyMap<number, UserProfile>,
  loaded: Map<number, UserProfile>,
): Promise<UserSearchResult> {
  if (search.properties.length === 0) {
    const userIds = held.size === 0 ? await readPage(db, search, loaded) : await checkPage(db, search, held, loaded);
    return { userIds, scan: {} };
  }
  // Checked here, on the first rows of the search in order, at most SCAN_ROWS of them.
  const rows = await findUsers(db, search, { limit: SCAN_ROWS, offset: 0 });
  return {
    userIds: rows
      .filter((row) => matchesAll(row, checks))
      .slice(search.offset, search.offset + search.limit)
      .map((row) => row.userId),
    scan: { scanned: rows.length, scanComplete: rows.length < SCAN_ROWS },
  };
}

export const userListRoutes = new Hono<AppEnv>().get(
  "/users",
  describeRoute({
    name: "Search users",
    controller: "api/users#index",
    description: 'docs/api.md "Users": exact, fuzzy and `/regular expression/flags` criteria, AND-ed.',
    parameters: listParameters(USER_LIST, {
      ...Object.fromEntries(
        NAME_PROPERTIES.map((name) => [name, "Fuzzy (case, accents); `Hans*` is a prefix; or `/pattern/flags` (RE2)"]),
      ),
      clientId: CLIENT_ID_PARAMETER,
    }),
    success: { data: z.array(z.union([userSchema, limitedUserSchema])), collection: true },
  }),
  requireToken("users", "server"),
  async (c) => {
    const url = new URL(c.req.url);
    const query = parseListQuery(url, USER_LIST, nowInSeconds());
    // The client read acts as the calling client, for the search and for the views (rule 2).
    const clientId = await readableClientId(c, query.where.clientId);
    const scope = { clientId, merchantId: c.get("caller").merchantId };
    const db = c.get("db");
    const fresh = c.get("bookmarked");
    const loaded = new Map<number, UserProfile>();
    const search = (held: Map<number, UserProfile>) => searchUsers(db(), plan(scope, query), held, loaded);
    const { userIds, scan } = await readUserSearch(scope, url, search, fresh);
    const profiles = await readUserProfiles(db, userIds, fresh, loaded);
    if (profiles.length === 0) throw new ApiError(404, "invalid_request", "No users found");
    const limited = (profile: UserProfile) =>
      !profile.connections.some((connection) => connection.clientId === clientId);
    const view = (profile: UserProfile) => (limited(profile) ? limitedUserView(profile) : userView(profile));
    return respondPage(c, "Users", query, profiles, view, scan, (profile) => userViewJson(profile, limited(profile)));
  },
);
