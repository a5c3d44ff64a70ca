/**
 * The query plans of list pages: every accepted filter, criterion and sort is served by an index
 * that starts with the client id, so a page reads about as many rows as it shows. SQLite plans
 * without table statistics here as on D1, so the plans do not depend on how much data there is.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../src/db/client";
import { type DigitalContentSearch, searchDigitalContents } from "../src/db/queries/digital-contents";
import { accessRow, grantedRow, userProducts } from "../src/db/queries/product-access";
import { type ProductSearch, searchProducts } from "../src/db/queries/products";
import { listAuditEvents } from "../src/db/queries/audit";
import {
  callbackChangeRows,
  changesWaiting,
  clientsWithOverdueChanges,
  deliveredChanges,
  failedChanges,
  replayFailedChanges,
  waitingChanges,
} from "../src/db/queries/callbacks";
import { eraseUser } from "../src/db/queries/erasure";
import { userMails } from "../src/db/queries/mails";
import {
  purgeAuditEvents,
  purgeFailedCallbacks,
  purgeIdempotencyKeys,
  purgeRefreshTokens,
  purgeSessions,
  purgeSigninRequests,
} from "../src/db/queries/retention";
import {
  backchannelClients,
  findUserGrants,
  revokeUserRefreshTokens,
  userBackchannelClients,
} from "../src/db/queries/refresh-tokens";
import { findLiveUserSessions, revokeUserSessions } from "../src/db/queries/sessions";
import { findPendingSignOuts, settlePendingSignOut } from "../src/db/queries/status-sign-outs";
import { disconnectUser } from "../src/db/queries/users";
import { type UserSearch, userSearchStatement, userVersionsStatement } from "../src/db/queries/user-search";

const db = openDatabase(env.DB);

type Query = { toSQL(): { sql: string; params: unknown[] } } | { getQuery(): { sql: string; params: unknown[] } };

async function plan(query: Query): Promise<string> {
  const { sql, params } = "toSQL" in query ? query.toSQL() : query.getQuery();
  const { results } = await env.DB.prepare(`EXPLAIN QUERY PLAN ${sql}`)
    .bind(...params)
    .all<{ detail: string }>();
  return results.map((row) => row.detail).join("\n");
}

const page = { since: null, until: null, limit: 100, offset: 0 } as const;
const products = (search: Partial<ProductSearch>) =>
  searchProducts(db, {
    clientId: "c",
    statuses: [0, 1, 2, 3],
    types: null,
    timeColumn: "created",
    sort: [{ property: "productId", direction: "asc" }],
    ...page,
    ...search,
  });
const contents = (search: Partial<DigitalContentSearch>) =>
  searchDigitalContents(db, {
    clientId: "c",
    statuses: [0, 1],
    timeColumn: "created",
    sort: [{ property: "userProductId", direction: "asc" }],
    ...page,
    ...search,
  });

describe("product pages", () => {
  it.each<[string, Partial<ProductSearch>, RegExp]>([
    ["the default order", {}, /USING INDEX products_client_idx \(client_id=\?\)$/],
    ["several names", { names: ["a", "b"] }, /USING INDEX products_client_name_idx/],
    ["several codes", { codes: ["a", "b"] }, /USING INDEX products_client_code_idx/],
    ["several prices", { prices: [1, 2] }, /USING INDEX products_client_price_idx/],
    ["parent products", { parentProductIds: [1, 2] }, /USING INDEX products_client_parent_idx/],
    ["product ids", { productIds: [1, 2] }, /USING INTEGER PRIMARY KEY|USING INDEX products_client/],
    [
      "a time window in time order",
      { since: 0, until: 10, sort: [{ property: "created", direction: "asc" }] },
      /USING INDEX products_client_created_idx/,
    ],
    [
      "recent changes, newest first",
      { timeColumn: "changed", since: 0, sort: [{ property: "changed", direction: "desc" }] },
      /USING INDEX products_client_changed_idx/,
    ],
  ])("%s use an index of the client's", async (_, search, index) => {
    const detail = await plan(products(search));
    expect(detail).toMatch(index);
    expect(detail).not.toMatch(/\bSCAN products\b/);
  });

  it("sorts a page in index order, with no sort of the whole set", async () => {
    expect(await plan(products({}))).not.toMatch(/TEMP B-TREE/);
    expect(
      await plan(products({ timeColumn: "changed", sort: [{ property: "changed", direction: "desc" }] })),
    ).not.toMatch(/TEMP B-TREE/);
  });
});

describe("digital content pages", () => {
  it.each<[string, Partial<DigitalContentSearch>, RegExp]>([
    ["the default order", {}, /USING INDEX digital_contents_client_idx \(client_id=\?\)$/],
    ["several users", { userIds: [1, 2] }, /USING INDEX digital_contents_client_user_idx/],
    ["several products", { productIds: [1, 2] }, /USING INDEX digital_contents_client_product_idx/],
    ["a product family", { familyProductIds: [1, 2] }, /USING (COVERING )?INDEX products_client_parent_idx/],
  ])("%s use an index of the client's", async (_, search, index) => {
    const detail = await plan(contents(search));
    expect(detail).toMatch(index);
    expect(detail).not.toMatch(/\bSCAN digital_contents\b/);
  });
});

/**
 * A page of users as `GET /api/2/users` reads it: with its users' rows, or their versions packed
 * into one row, or (a scan) with the properties it checks.
 */
const users = (search: Partial<UserSearch>, carried: "row" | "version" = "row") => {
  const full: UserSearch = {
    scope: { clientId: "c" },
    statuses: [0, 1],
    timeColumn: "published",
    names: {},
    properties: [],
    sort: [{ property: "userId", direction: "asc" }],
    ...page,
    ...search,
  };
  if (full.properties.length > 0) return userSearchStatement(db, full, full, "properties");
  return carried === "version" ? userVersionsStatement(db, full) : userSearchStatement(db, full, full, "row");
};

describe.each(["row", "version"] as const)("user pages, carrying each user's %s", (carried) => {
  it.each<[string, Partial<UserSearch>, RegExp]>(
    (
      [
        [
          "the default order",
          {},
          /USING COVERING INDEX user_clients_client_status_user_idx \(client_id=\? AND status=\?\)/,
        ],
        [
          "a merchant's users",
          { scope: { merchantId: 1 } },
          /USING COVERING INDEX user_clients_merchant_status_user_idx \(merchant_id=\? AND status=\?\)/,
        ],
        [
          "newest first",
          { sort: [{ property: "published", direction: "desc" }] },
          /USING COVERING INDEX user_clients_client_status_published_idx/,
        ],
        [
          "recently updated, in a time window",
          { timeColumn: "updated", since: 0, until: 10, sort: [{ property: "updated", direction: "desc" }] },
          /USING COVERING INDEX user_clients_client_status_updated_idx \(client_id=\? AND status=\? AND updated>\? AND updated<\?\)/,
        ],
        [
          "a scan for checks no index answers, carrying a property",
          { properties: ["gender"], scope: { merchantId: 1 }, sort: [{ property: "published", direction: "asc" }] },
          /USING (COVERING )?INDEX user_clients_merchant_status_published_idx/,
        ],
      ] satisfies [string, Partial<UserSearch>, RegExp][]
    )
      // A scan carries the properties it checks, never the versions.
      .filter(([, search]) => carried === "row" || !("properties" in search)),
  )("%s walk one index range per status, in order", async (_, search, index) => {
    const detail = await plan(users(search, carried));
    expect(detail).toMatch(index);
    expect(detail).not.toMatch(/\bSCAN (users|user_clients)\b(?! USING)/);
    // Only the page's own users' rows are read, each by its key.
    expect(detail).toMatch(/SEARCH users USING INTEGER PRIMARY KEY \(rowid=\?\)/);
    // A client's ranges arrive in order and are merged as they come: nothing is sorted. A
    // merchant's are made distinct per status, so each (at most offset + limit rows) is sorted.
    const merchant = "merchantId" in (search.scope ?? {});
    expect(detail.match(/TEMP B-TREE FOR ORDER BY/g)?.length ?? 0).toBe(merchant ? 2 : 0);
    expect(detail).toMatch(/MERGE \(UNION ALL\)/);
  });

  it.each<[string, Partial<UserSearch>, RegExp]>([
    [
      "a primary e-mail",
      { emails: ["a@example.org"] },
      /^SEARCH users USING INTEGER PRIMARY KEY \(rowid=\?\)\nSCALAR SUBQUERY 1\nSEARCH user_emails USING INDEX user_emails_value_idx \(value=\?\)$/m,
    ],
    ["primary e-mails", { emails: ["a@example.org", "b@example.org"] }, /SEARCH users USING INDEX users_email_idx/],
    [
      "any e-mail",
      { anyEmails: ["a@example.org"] },
      /SEARCH user_emails USING (COVERING )?INDEX user_emails_value_idx/,
    ],
    ["a userId", { userIds: [1] }, /SEARCH users USING INTEGER PRIMARY KEY/],
    ["a uuid", { uuids: ["u"] }, /SEARCH users USING INDEX users_uuid_idx/],
    ["a legacy id", { legacyIds: ["l"] }, /SEARCH users USING INDEX users_legacy_id_idx/],
    ["a phone number", { phoneNumbers: ["+47"] }, /SEARCH users USING INDEX users_phone_number_idx/],
    ["a family name", { names: { familyName: ["hansen"] } }, /SEARCH users USING INDEX users_family_name_key_idx/],
    [
      "a display name, of a merchant's users",
      { names: { displayName: ["a"] }, scope: { merchantId: 1 } },
      /SEARCH users USING INDEX users_display_name_key_idx/,
    ],
  ])("a search by %s starts from its index", async (_, search, index) => {
    const detail = await plan(users(search, carried));
    expect(detail).toMatch(index);
    expect(detail).toMatch(/user_clients USING (COVERING INDEX|PRIMARY KEY|INDEX)/);
    expect(detail).not.toMatch(/\bSCAN (users|user_clients)\b/);
  });
});

describe("a user's products", () => {
  it("finds the user's rows at the client by the client and user index, for the list and for a grant", async () => {
    const list = await plan(userProducts(db, { clientId: "c", userId: 1, statuses: [3], sort: [], ...page }));
    expect(list).toMatch(/USING INDEX digital_contents_client_user_idx \(client_id=\? AND user_id=\?\)/);
    expect(list).toMatch(/USING INTEGER PRIMARY KEY/);
    const granted = await plan(grantedRow(db, { clientId: "c", userId: 1 }, 7));
    // The user's few rows by the index, then sorted: blocked first, then newest.
    expect(granted).toMatch(
      /^SEARCH digital_contents USING INDEX digital_contents_client_user_idx \(client_id=\? AND user_id=\?\)$/m,
    );
    expect(granted).not.toMatch(/SCAN/);
    // The access check: the product's client and parent by its primary key, the user's rows by the index.
    const check = await plan(accessRow(db, 1, 7));
    expect(check).toMatch(
      /SEARCH digital_contents USING INDEX digital_contents_client_user_idx \(client_id=\? AND user_id=\?\)/,
    );
    expect(check).toMatch(/SEARCH products USING INTEGER PRIMARY KEY/);
    expect(check).not.toMatch(/SCAN/);
  });
});

describe("back-channel logout", () => {
  it("finds a session's clients by the refresh tokens' sid index, each client and user by its key", async () => {
    const found = await plan(backchannelClients(db, "sid"));
    expect(found).toMatch(/SEARCH refresh_tokens USING INDEX refresh_tokens_sid_idx \(sid=\?\)/);
    expect(found).not.toMatch(/SCAN (clients|users)\b/);
  });
});

describe("managing a user", () => {
  const scopes = [null, { clientId: "c" }, { merchantId: 10 }] as const;

  it.each(scopes)("finds and ends the user's sessions and grants by the user's index (scope %o)", async (scope) => {
    for (const query of [findLiveUserSessions(db, 1, scope, 0), revokeUserSessions(db, 1, scope, 0)]) {
      expect(await plan(query)).toMatch(/SEARCH sessions USING INDEX sessions_user_idx \(user_id=\?\)/);
    }
    for (const query of [
      findUserGrants(db, 1, scope, 0),
      revokeUserRefreshTokens(db, 1, scope, 0, ["a"]),
      userBackchannelClients(db, 1, scope, ["a", "b"], 0),
    ]) {
      const found = await plan(query);
      expect(found).toMatch(/SEARCH refresh_tokens USING INDEX refresh_tokens_user_client_idx \(user_id=\?/);
      expect(found).not.toMatch(/SCAN (refresh_tokens|clients|users)\b/);
    }
    const disconnect = await plan(disconnectUser(db, 1, scope));
    expect(disconnect).toMatch(
      /SEARCH user_clients USING (COVERING )?INDEX (sqlite_autoindex_user_clients|user_clients_user_idx)/,
    );
    expect(disconnect).not.toMatch(/SCAN user_clients/);
  });
});

describe("mail history", () => {
  it.each([
    ["of one client", { clientId: "c" }, /mails_user_client_created_idx \(user_id=\? AND client_id=\?\)/],
    ["of a merchant's clients", { merchantId: 10 }, /mails_user_(client_)?created_idx/],
    ["of every client", null, /mails_user_(client_)?created_idx/],
  ] as const)("reads a user's mails %s by an index that starts with the user", async (_, scope, index) => {
    const found = await plan(userMails(db, 1, 100, scope));
    expect(found).toMatch(index);
    expect(found).not.toMatch(/SCAN mails/);
  });
});

describe("erasing a user", () => {
  it("finds every row it deletes or scrubs by an index, scanning no table", async () => {
    for (const statement of eraseUser(db, 1, 0, ["a"])) {
      const found = await plan(statement);
      // A list passed as JSON (json_each) is scanned, as a list is: no table is.
      expect(found, found).not.toMatch(/\bSCAN (?!CONSTANT|json_each)/);
    }
  });
});

describe("the retention job", () => {
  it.each([
    ["refresh tokens", purgeRefreshTokens(db, 0, 10), /refresh_tokens_expires_idx/],
    ["sessions", purgeSessions(db, 0, 10), /sessions_expires_idx/],
    ["sign-in link rows", purgeSigninRequests(db, 0, 10), /signin_requests_expires_idx/],
    ["audit entries", purgeAuditEvents(db, 0, 10), /audit_events_at_idx/],
    ["idempotency keys", purgeIdempotencyKeys(db, 0, 10), /idempotency_keys_created_idx/],
    ["failed callbacks", purgeFailedCallbacks(db, 0, 10), /callback_changes_waiting_idx/],
  ] as const)("finds expired %s by their time's index", async (_, statement, index) => {
    const found = await plan(statement);
    expect(found).toMatch(index);
    expect(found).not.toMatch(
      /\bSCAN (refresh_tokens|sessions|signin_requests|audit_events|idempotency_keys|callback_changes)\b/,
    );
  });
});

describe("callbacks", () => {
  it.each([
    [
      "the rows a change adds, by the user's connections",
      callbackChangeRows(db, { userId: 1, changedFields: ["status"], scope: { merchantId: 10 } }, 0),
      /SEARCH user_clients USING (COVERING )?INDEX/,
    ],
    ["a client's waiting changes, oldest first", waitingChanges(db, "c", 100), /callback_changes_client_idx/],
    ["whether any still wait", changesWaiting(db, "c"), /callback_changes_client_idx/],
    ["the delivered ones it deletes", deliveredChanges(db, "c", 10), /callback_changes_client_idx/],
    ["the failed ones it marks", failedChanges(db, "c", 10, 0), /callback_changes_client_idx/],
    ["the failed ones a replay sends again", replayFailedChanges(db, "c"), /callback_changes_client_idx/],
  ] as const)("finds %s by an index, with no sort", async (_, statement, index) => {
    const found = await plan(statement);
    expect(found).toMatch(index);
    expect(found).not.toMatch(/TEMP B-TREE|\bSCAN (callback_changes|user_clients|clients)\b/);
  });

  it("finds the clients with overdue changes by the waiting index (the hourly job; distinct in a temporary tree)", async () => {
    const found = await plan(clientsWithOverdueChanges(db, 0, 10));
    expect(found).toMatch(/callback_changes_waiting_idx/);
    expect(found).not.toMatch(/\bSCAN callback_changes\b/);
  });
});

describe("the sign-out job", () => {
  it("takes the oldest waiting users by their index, with no sort, and settles one by its key", async () => {
    const oldest = await plan(findPendingSignOuts(db, 500));
    expect(oldest).toMatch(/pending_sign_outs_requested_idx/);
    expect(oldest).not.toMatch(/TEMP B-TREE/);
    expect(await plan(settlePendingSignOut(db, 1, 0))).toMatch(/SEARCH pending_sign_outs USING INTEGER PRIMARY KEY/);
  });
});

describe("the audit trail", () => {
  const window = { since: null, until: null };
  it.each([
    ["a merchant's", { merchantId: 10 }, /audit_events_merchant_idx/],
    ["a merchant's, by user", { merchantId: 10, userId: 1 }, /audit_events_merchant_user_idx/],
    ["a merchant's, by client", { merchantId: 10, clientId: "c" }, /audit_events_merchant_client_idx/],
    ["every merchant's, by user", { merchantId: null, userId: 1 }, /audit_events_user_idx/],
  ] as const)("reads %s entries newest first by an index, with no sort", async (_, filter, index) => {
    const found = await plan(listAuditEvents(db, { ...window, ...filter }, { limit: 100, offset: 0 }));
    expect(found).toMatch(index);
    expect(found).not.toMatch(/TEMP B-TREE|SCAN audit_events$/m);
  });
});
