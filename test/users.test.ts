import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { LIMITED_USER_FIELDS, USER_FIELDS } from "../src/schemas/responses/user";
import { bearer, call, type Container, container, serverToken, userToken } from "./helpers/http";
import { createClient, importData } from "./helpers/seed";

/**
 * A merchant of its own with two clients: one with users of every status, a sibling with users of
 * its own; and a client of another merchant with a user of its own.
 */
let client: { id: string; secret: string };
let sibling: { id: string; secret: string };
let stranger: { id: string; secret: string };
let token: string;
const base = 810_000 + Math.floor(Math.random() * 1000) * 100;

const user = (n: number, overrides: Record<string, unknown> = {}) => ({
  userId: String(base + n),
  uuid: crypto.randomUUID(),
  status: 1,
  email: `user${base + n}@example.org`,
  published: `2020-01-${String(n).padStart(2, "0")} 12:00:00`,
  updated: `2024-06-${String(30 - n).padStart(2, "0")} 12:00:00`,
  clients: [client.id],
  ...overrides,
});

beforeAll(async () => {
  const merchantId = 900_000 + Math.floor(Math.random() * 100_000) * 2;
  const merchants = [merchantId, merchantId + 1].map((id) => ({ merchantId: id, name: `Merchant ${id}` }));
  await importData({ merchants });
  client = await createClient({ merchantId });
  sibling = await createClient({ merchantId });
  stranger = await createClient({ merchantId: merchantId + 1 });
  token = await serverToken(client);
  await importData({
    users: [
      user(1, {
        id: `legacy-${base}-1`,
        name: { givenName: "Ingrid", familyName: "Hansen" },
        displayName: "Ingrid H.",
        preferredUsername: "IngridH",
        gender: "female",
        locale: "nb_NO",
        phoneNumber: "+4790000001",
        emails: [{ value: `ingrid.${base}@work.example`, type: "work" }],
      }),
      user(2, {
        status: 0,
        name: { givenName: "Åse", familyName: "Ærø-Hansen" },
        gender: "female",
        locale: "da_DK",
        email: `ærø.åse.${base}@bücher.example`,
      }),
      user(3, { name: { givenName: "Erik", familyName: "Østby" }, gender: "male", locale: "nb_NO" }),
      user(4, { status: -1, name: { familyName: "Hansen" } }),
      user(5, { status: -2, name: { familyName: "Blocked" } }),
      user(6, { status: -3, name: { familyName: "Deleted" } }),
      user(7, { name: { familyName: "Sibling" }, clients: [sibling.id] }),
      user(8, { name: { familyName: "Both" }, clients: [client.id, sibling.id] }),
      user(9, { name: { familyName: "Hansen" }, clients: [stranger.id] }),
    ],
  });
});

async function list(
  query: string,
  bearerToken = token,
  headers: Record<string, string> = {},
): Promise<{ res: Response; body: Container }> {
  const res = await call(`/api/2/users${query}`, { headers: { ...bearer(bearerToken), ...headers } });
  return { res, body: await container(res) };
}

/** The D1 statements a request ran (development's Server-Timing). */
const statements = (res: Response) =>
  Number(/d1;[^,]*desc="(\d+) queries/.exec(res.headers.get("Server-Timing") ?? "")?.[1]);

/** The found users as numbers 1-9, in the order returned. */
const found = (body: Container) => ((body.data ?? []) as { userId: string }[]).map((u) => Number(u.userId) - base);

async function expectFound(query: string, expected: number[], headers: Record<string, string> = {}) {
  const { res, body } = await list(query, token, headers);
  expect(res.status, JSON.stringify(body.error)).toBe(200);
  expect(found(body)).toEqual(expected);
  return body;
}

async function expectInvalid(query: string, parameter: string) {
  const { res, body } = await list(query);
  expect(res.status).toBe(400);
  expect(body.error).toMatchObject({ error: "invalid_request", error_code: 400 });
  expect(body.error!.error_description).toContain(`Invalid parameter value: ${parameter}`);
}

describe("GET /api/2/users: happy path", () => {
  it("lists the client's active users by userId, as full User objects (rule 1)", async () => {
    const body = await expectFound("", [1, 2, 3, 8]);
    expect(body).toMatchObject({ object: "Users", type: "collection", meta: { count: 4, offset: 0 } });
    expect(Object.keys(body.data[0])).toEqual([...USER_FIELDS]);
    expect(body.data[0]).toMatchObject({
      userId: String(base + 1),
      id: `legacy-${base}-1`,
      status: 1,
      email: `user${base + 1}@example.org`,
      name: { givenName: "Ingrid", familyName: "Hansen" },
      gender: "female",
    });
    expect(body.debug.params).toMatchObject({
      options: { limit: 100, offset: 0, sort: [{ property: "userId", direction: "asc" }] },
      where: {},
    });
  });

  it.each([
    ["verified", [1, 3, 8]],
    ["unverified", [2]],
    ["inactive", [4]],
    ["blocked", [5]],
    ["deleted", [6]],
    ["inactive,blocked", [4, 5]],
    ["verified,deleted", [1, 3, 6, 8]],
  ])("filters=%s selects by status, several OR-ed", async (filters, expected) => {
    await expectFound(`?filters=${filters}`, expected);
  });

  it("filters=merchant shows the merchant's users, other clients' in the limited view", async () => {
    const body = await expectFound("?filters=merchant", [1, 2, 3, 7, 8]);
    const sibling7 = body.data[3];
    expect(Object.keys(sibling7).sort()).toEqual([...LIMITED_USER_FIELDS].sort());
    expect(sibling7.email).toBeUndefined();
    expect(body.data[4].email).toBe(`user${base + 8}@example.org`);
    await expectFound("?filters=merchant,deleted", [6]);
  });

  it.each([
    ["the legacy id", "?id=legacy-BASE-1", [1]],
    ["the primary e-mail", "?email=userID1@example.org", [1]],
    ["the primary e-mail in another case", "?email=USERID1@Example.org", [1]],
    ["a secondary e-mail, with emails", "?emails=ingrid.BASE@work.example", [1]],
    ["an internationalized address in punycode", "?email=ÆRØ.ÅSE.BASE@xn--bcher-kva.example", [2]],
    ["the phone number", "?phoneNumber=%2B4790000001", [1]],
    ["a family name in any case and without accents", "?familyName=aero-hansen", [2]],
    ["a family name prefix", "?familyName=Hans*", [1]],
    ["a given name with its accent", "?givenName=%C3%85se", [2]],
    ["a preferred username in another case", "?preferredUsername=ingridh", [1]],
    ["gender and locale, AND-ed", "?gender=female&locale=nb_NO", [1]],
    ["several values of one criterion, OR-ed", "?familyName=Hansen,%C3%98stby", [1, 3]],
    ["several values in brackets", "?familyName[]=Hansen&familyName[]=Both", [1, 8]],
  ])("finds users by %s", async (_, query, expected) => {
    await expectFound(query.replaceAll("ID1", String(base + 1)).replaceAll("BASE", String(base)), expected);
  });

  it("finds a user by userId and by uuid", async () => {
    const { body } = await list("?familyName=Hansen");
    await expectFound(`?userId=${base + 1}`, [1]);
    await expectFound(`?uuid=${body.data[0].uuid.toUpperCase()}`, [1]);
  });

  it("does not find a secondary e-mail with email, which is the primary one", async () => {
    const { res, body } = await list(`?email=ingrid.${base}@work.example`);
    expect(res.status).toBe(404);
    expect(body.error!.error_description).toBe("No users found");
  });

  it("reads an ISO-8859-1 query as the same UTF-8 query", async () => {
    const utf8 = await expectFound("?familyName=%C3%98stby", [3]);
    const latin1 = await expectFound("?familyName=%D8stby", [3]);
    expect(latin1.data).toEqual(utf8.data);
  });

  it("applies since and until to published, or to updated with the updated filter (rule 2)", async () => {
    await expectFound("?since=2020-01-02&until=2020-01-03 23:59:59", [2, 3]);
    await expectFound("?filters=updated&since=2024-06-27&until=2024-06-28 23:59:59", [2, 3]);
  });

  it("orders by updated, newest first, with the updated filter", async () => {
    await expectFound("?filters=updated", [1, 2, 3, 8]);
  });

  it.each([
    ["sort=-userId", [8, 3, 2, 1]],
    ["sort[published]=desc", [8, 3, 2, 1]],
    ["sort=updated", [8, 3, 2, 1]],
    ["sort=published&filters=merchant", [1, 2, 3, 7, 8]],
  ])("sorts with %s", async (query, expected) => {
    await expectFound(`?${query}`, expected);
  });

  it("pages with limit and offset", async () => {
    const body = await expectFound("?limit=2&offset=1", [2, 3]);
    expect(body.meta).toEqual({ count: 2, offset: 1 });
    await expectFound("?limit=2&offset=1&filters=merchant", [2, 3]);
  });

  it("serves the same users whole (kept JSON text), with every field selected, and as JSONP", async () => {
    const { body } = await list("?sort=userId");
    const selected = await list(`?sort=userId&fields=${USER_FIELDS.join(",")}`);
    expect(selected.body.data).toEqual(body.data);
    const res = await call("/api/2/users.jsonp?sort=userId&callback=show", { headers: bearer(token) });
    const match = /^\/\*\*\/show\((.*)\);$/s.exec(await res.text());
    expect(JSON.parse(match![1]!).data).toEqual(body.data);
  });

  it("trims each user to the selected fields", async () => {
    const { body } = await list("?fields=userId,email&limit=1");
    expect(body.data).toEqual([{ userId: String(base + 1), email: `user${base + 1}@example.org` }]);
  });

  it("follows a user's status changes, which the search index copies", async () => {
    await importData({ users: [user(10, { status: 1, name: { familyName: "Changing" } })] });
    await expectFound("?familyName=Changing&filters=verified", [10]);
    const { res, body } = await list("?filters=verified&sort=-userId&limit=1");
    expect(found(body)).toEqual([10]);
    await importData({ users: [user(10, { status: -2, name: { familyName: "Changing" } })] });
    // With a bookmark, a read skips the isolate's read cache, which still has the page from before.
    const fresh = { "x-d1-bookmark": res.headers.get("x-d1-bookmark")! };
    await expectFound("?filters=blocked&sort=-userId&limit=1", [10], fresh);
    await expectFound("?filters=verified&sort=-userId&limit=1", [8], fresh);
  });
});

describe("GET /api/2/users: regular expressions", () => {
  const query = (criteria: Record<string, string>) => `?${new URLSearchParams(criteria)}`;

  it.each<[Record<string, string>, number[]]>([
    [{ familyName: "/^han/i" }, [1]],
    [{ familyName: "/ns/" }, [1, 2]],
    [{ email: "/^user\\d+1@/" }, [1]],
    [{ emails: "/@work\\.example$/" }, [1]],
    [{ givenName: "/^(Ingrid|Erik)$/", gender: "male" }, [3]],
    [{ familyName: "/^.{4,6}$/" }, [1, 3, 8]],
    [{ familyName: "/^\\p{Lu}\\pL+$/" }, [1, 3, 8]],
    [{ familyName: "/^h/i", filters: "merchant" }, [1]],
  ])("%o", async (criteria, expected) => {
    const body = await expectFound(query(criteria), expected);
    expect(body.meta).toMatchObject({ count: expected.length, scanComplete: true });
  });

  it("checks name prefixes and criteria without an index on the same bounded scan", async () => {
    for (const [q, expected, scanned] of [
      ["?familyName=Hans*", [1], 4],
      ["?gender=female", [1, 2], 4],
      // Narrowed by the exact name first: only the client's active Hansens are scanned.
      ["?locale=nb_NO&familyName=Hansen", [1], 1],
    ] as const) {
      const body = await expectFound(q, [...expected]);
      expect(body.meta, q).toMatchObject({ scanned, scanComplete: true });
    }
    const exact = await expectFound("?familyName=Hansen", [1]);
    expect(exact.meta).toEqual({ count: 1, offset: 0 });
  });

  it("reports how many rows it examined", async () => {
    const body = await expectFound(query({ familyName: "/e/" }), [1, 2]);
    expect(body.meta).toEqual({ count: 2, offset: 0, scanned: 4, scanComplete: true });
  });

  it.each([
    ["a malformed pattern", "familyName=/(/", "familyName"],
    ["a back-reference, which a linear-time engine cannot run", "familyName=/(a)%5C1/", "familyName"],
    ["a look-ahead", "familyName=/a(%3F=b)/", "familyName"],
    ["an unknown flag", "familyName=/a/x", "familyName"],
    ["a repeated flag", "familyName=/a/ii", "familyName"],
    ["two expressions for one property", "familyName[]=/a/&familyName[]=/b/", "familyName"],
    ["an expression for userId", "userId=/1/", "userId"],
    ["a pattern over the length limit", `familyName=/${"a".repeat(300)}/`, "familyName"],
  ])("refuses %s", async (_, query, parameter) => {
    await expectInvalid(`?${query}`, parameter);
  });
});

describe("GET /api/2/users: errors", () => {
  it("answers 404 No users found on an empty result", async () => {
    const { res, body } = await list("?familyName=Nobody");
    expect(res.status).toBe(404);
    expect(body.error).toMatchObject({ error_code: 404, error_description: "No users found" });
  });

  it.each([
    ["limit=abc", "limit"],
    ["limit=-1", "limit"],
    ["offset=x", "offset"],
    ["since=not a date", "since"],
    ["userId=abc", "userId"],
    ["uuid=not-a-uuid", "uuid"],
    ["email=not-an-address", "email"],
    ["emails=a@b", "emails"],
    ["familyName=*", "familyName"],
    ["familyName=a*b*", "familyName"],
    ["filters=active", "filters"],
    ["sort=familyName", "sort"],
    ["sort=published,userId", "sort"],
    ["sort[userId]=up", "sort[userId]"],
    ["fields=password", "fields"],
  ])("refuses %s", async (query, parameter) => {
    await expectInvalid(`?${query}`, parameter);
  });

  it("refuses an unknown parameter", async () => {
    const { res, body } = await list("?password=x");
    expect(res.status).toBe(400);
    expect(body.error!.error_description).toContain("Unknown parameter");
  });

  it("refuses a user token", async () => {
    const { res } = await list("", await userToken());
    expect(res.status).toBe(403);
  });
});

describe("GET /api/2/users: security", () => {
  it("never shows a client the users of another client without the merchant filter", async () => {
    const { res } = await list("?familyName=Sibling");
    expect(res.status).toBe(404);
    await expectFound("?familyName=Sibling&filters=merchant", [7]);
  });

  it("never shows another merchant's users, with or without the merchant filter", async () => {
    await expectFound("?familyName=Hansen&filters=merchant", [1]);
    const { res } = await list(`?userId=${base + 9}&filters=merchant`);
    expect(res.status).toBe(404);
    const other = await list("?familyName=Hansen", await serverToken(stranger));
    expect(found(other.body)).toEqual([9]);
    const mismatch = await list(`?userId=${base + 1}&filters=merchant`, await serverToken(stranger));
    expect(mismatch.res.status).toBe(404);
  });

  it("never matches what the limited view hides on users of the merchant's other clients", async () => {
    // User 7 is the sibling's: its e-mail and phone number are hidden from this client (rule 2).
    for (const criteria of [
      { email: `user${base + 7}@example.org` },
      { emails: `user${base + 7}@example.org` },
      { email: "/^user/", familyName: "Sibling" },
    ] as Record<string, string>[]) {
      const { res } = await list(`?${new URLSearchParams({ ...criteria, filters: "merchant" })}`);
      expect(res.status, JSON.stringify(criteria)).toBe(404);
    }
    await expectFound(`?${new URLSearchParams({ email: "/^user/", filters: "merchant" })}`, [1, 3, 8]);
    await expectFound(`?filters=merchant&email=user${base + 8}@example.org`, [8]);
  });

  it("shows a sibling client its own users only", async () => {
    await expectFound("", [1, 2, 3, 8]);
    const { body } = await list("", await serverToken(sibling));
    expect(found(body)).toEqual([7, 8]);
  });
});

describe("GET /api/2/users with a bookmark: the isolate's copies, checked by their version", () => {
  const versionOf = async (n: number) =>
    (await env.DB.prepare("SELECT version FROM users WHERE id = ?")
      .bind(base + n)
      .first<{ version: number }>())!.version;

  it.each<[string, string, number, Record<string, unknown>]>([
    ["narrowed by a name's index", "?familyName=Versioned", 11, { name: { familyName: "Versioned" } }],
    ["walked in the client's order", "?filters=unverified&sort=-userId&limit=2", 13, { status: 0 }],
  ])("%s: reads its own writes, and reuses a copy only while its version is the user's", async (_, q, a, fields) => {
    const b = a + 1;
    await importData({ users: [user(a, { displayName: "First", ...fields }), user(b, fields)] });
    const { res } = await list(q);
    const bookmark = { "x-d1-bookmark": res.headers.get("x-d1-bookmark")! };
    const page = async () => {
      const { res, body } = await list(q, token, bookmark);
      expect(res.status).toBe(200);
      return body.data as { userId: string; displayName: string | null; emails: { value: string }[] }[];
    };
    expect((await page()).map((u) => Number(u.userId) - base)).toEqual(q.includes("-userId") ? [b, a] : [a, b]);

    // A write that leaves the version as it was (no path does): the isolate's copy is reused, as
    // the version is all a page read from D1 asks about a user the isolate holds.
    const version = await versionOf(a);
    await env.DB.batch([
      env.DB.prepare("UPDATE users SET display_name = 'Unseen' WHERE id = ?").bind(base + a),
      env.DB.prepare("UPDATE users SET version = ? WHERE id = ?").bind(version, base + a),
    ]);
    expect((await page()).find((u) => Number(u.userId) === base + a)!.displayName).toBe("First");

    // Any other write changes the version: an update of the row, and a part (by the import).
    await env.DB.prepare("UPDATE users SET display_name = 'Seen' WHERE id = ?")
      .bind(base + a)
      .run();
    await importData({
      users: [user(b, { emails: [{ value: `added${base + b}@example.org`, type: "work" }], ...fields })],
    });
    const after = await page();
    expect(after.find((u) => Number(u.userId) === base + a)!.displayName).toBe("Seen");
    expect(after.find((u) => Number(u.userId) === base + b)!.emails.map((e) => e.value)).toContain(
      `added${base + b}@example.org`,
    );
  });

  it.each<[string, string, number[]]>([
    ["narrowed, newest first", "?familyName=Packed&sort=-published", [17, 18, 16, 15]],
    [
      "narrowed by ids, by id descending",
      `?userId=${[15, 16, 17, 18].map((n) => base + n)}&sort=-userId`,
      [18, 17, 16, 15],
    ],
    ["walked in the client's order, oldest first", "?sort=published&limit=100", [15, 16, 18, 17]],
    ["walked in the merchant's order, newest first", "?filters=merchant&sort=-published&limit=100", [17, 18, 16, 15]],
  ])("%s: read again with its users' versions alone, keeps the page's order", async (_, q, order) => {
    // 16 and 18 share a time: the user id decides between them, in the sort's direction.
    const at = (day: number) => `2019-01-0${day} 12:00:00`;
    await importData({
      users: [
        user(15, { name: { familyName: "Packed" }, published: at(1) }),
        user(16, { name: { familyName: "Packed" }, published: at(2) }),
        user(17, { name: { familyName: "Packed" }, published: at(3) }),
        user(18, { name: { familyName: "Packed" }, published: at(2) }),
      ],
    });
    const { res } = await list(q);
    const bookmark = { "x-d1-bookmark": res.headers.get("x-d1-bookmark")! };
    const packed = (ns: number[]) => ns.filter((n) => n >= 15 && n <= 18);
    const page = async () => {
      const { res, body } = await list(q, token, bookmark);
      expect(res.status).toBe(200);
      return found(body);
    };
    const first = await page();
    expect(packed(first)).toEqual(order);
    // Every copy reused, then one user read by its key beside the others: the same page.
    expect(await page()).toEqual(first);
    await env.DB.prepare("UPDATE users SET display_name = 'Changed' WHERE id = ?")
      .bind(base + 16)
      .run();
    const { res: changed, body } = await list(q, token, bookmark);
    expect(found(body)).toEqual(first);
    const sixteen = (body.data as { userId: string; displayName: string }[]).find(
      (u) => u.userId === String(base + 16),
    );
    expect(sixteen!.displayName).toBe("Changed");
    expect(statements(changed)).toBe(2);
  });

  it("a user who enters the page between two reads from D1 is read by its key, in its place", async () => {
    const at = (day: number) => `2019-02-0${day} 12:00:00`;
    const entering = (n: number, day: number) => user(n, { name: { familyName: "Entering" }, published: at(day) });
    await importData({ users: [entering(19, 1), entering(20, 3)] });
    const q = "?familyName=Entering&sort=published";
    const { res } = await list(q);
    const bookmark = { "x-d1-bookmark": res.headers.get("x-d1-bookmark")! };
    expect(found((await list(q, token, bookmark)).body)).toEqual([19, 20]);
    const again = await list(q, token, bookmark);
    expect(found(again.body)).toEqual([19, 20]);
    expect(statements(again.res)).toBe(1);

    await importData({ users: [entering(21, 2)] });
    const after = await list(q, token, bookmark);
    expect(found(after.body)).toEqual([19, 21, 20]);
    expect(statements(after.res)).toBe(2);
  });
});
