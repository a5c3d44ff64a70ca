import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../src/db/client";
import { buildImportStatements } from "../src/db/import";
import * as schema from "../src/db/schema";
import { toSqlScript } from "../src/db/sql-script";
import { CLIENT_FIELDS } from "../src/schemas/client-fields";
import { GRANT_TYPES } from "../src/schemas/client-settings";
import { describeImportErrors, importFileSchema } from "../src/schemas/import";
import { LIMITS } from "../src/schemas/limits";
import example from "./fixtures/example-import.json";
import { importData } from "./helpers/seed";

const db = () => openDatabase(env.DB);
const [exampleClient, exampleUser] = [example.clients[0]!, example.users[1]!];

function problems(json: unknown): string[] {
  const result = importFileSchema.safeParse(json);
  return result.success ? [] : describeImportErrors(result.error);
}

/** Parsed from text, as the import reads files, so `__proto__` is an own key as in a real file. */
const fromJson = (text: string): unknown => JSON.parse(text);

describe("datetimes and birthdays must exist", () => {
  it.each([
    "2023-02-30 00:00:00",
    "2024-04-31 00:00:00",
    "2023-02-29 00:00:00",
    "2024-01-01 24:00:00",
    "2024-01-01 23:60:00",
    "2024-01-01 23:59:60",
    "2024-13-01 00:00:00",
    "2024-00-10 00:00:00",
    "0000-01-01 00:00:00",
    "1969-12-31 23:59:59",
    -1,
    1.5,
  ])("refuses the datetime %j with its path", (published) => {
    expect(problems({ users: [{ ...exampleUser, published }] })).toEqual([
      expect.stringMatching(/^users\[0\]\.published: expected/),
    ]);
  });

  it.each([
    ["2024-02-29 23:59:59", 1_709_251_199],
    ["1970-01-01 00:00:00", 0],
    ["9999-12-31T23:59:59", 253_402_300_799],
    [1_700_000_000, 1_700_000_000],
  ])("reads the datetime %j as %i", (published, seconds) => {
    expect(importFileSchema.parse({ users: [{ ...exampleUser, published }] }).users[0]!.published).toBe(seconds);
  });

  it.each([
    "2024-99-99",
    "2023-02-29",
    "2024-00-01",
    "1985-00-14",
    "0000-13-01",
    "0000-02-30",
    "24-01-01",
    "2999-01-01",
  ])("refuses the birthday %s with its path", (birthday) => {
    expect(problems({ users: [{ ...exampleUser, birthday }] })).toEqual([
      expect.stringMatching(/^users\[0\]\.birthday: /),
    ]);
  });

  it.each(["0000-00-00", "0000-02-29", "2024-02-29", "1985-07-14", "1985-00-00", "1985-07-00"])(
    "accepts the birthday %s",
    (birthday) => {
      expect(problems({ users: [{ ...exampleUser, birthday }] })).toEqual([]);
    },
  );
});

describe("unknown keys are refused at every depth", () => {
  it.each([
    ["clients[0].ipAllowList", { clients: [{ ...exampleClient, ipAllowList: ["10.9.9.9"] }] }],
    ["clients[0].rateLimit.limt", { clients: [{ ...exampleClient, rateLimit: { limt: 5, windowSeconds: 60 } }] }],
    ["clients[0].fields.emial", { clients: [{ ...exampleClient, fields: { emial: true } }] }],
    ["merchants[0].title", { merchants: [{ merchantId: 10, name: "Nordic Daily", title: "x" }] }],
    ["users[0].name.gievnName", { users: [{ ...exampleUser, name: { gievnName: "Erik" } }] }],
    [
      "users[0].emails[0].verifed",
      { users: [{ ...exampleUser, emails: [{ value: "erik.berg@example.org", verifed: true }] }] },
    ],
    ["users[0].phoneNumbers[0].kind", { users: [{ ...exampleUser, phoneNumbers: [{ value: "+47", kind: "x" }] }] }],
    ["users[0].addresses.home.street", { users: [{ ...exampleUser, addresses: { home: { street: "Gate 1" } } }] }],
    ["users[0].currentLocation[0].city", { users: [{ ...exampleUser, currentLocation: [{ city: "Oslo" }] }] }],
    ["users[0].accounts[0].user", { users: [{ ...exampleUser, accounts: [{ domain: "x.example", user: "e" }] }] }],
    ["products[0].prise", { products: [{ ...example.products[0], prise: 1 }] }],
    ["digitalContents[0].stauts", { digitalContents: [{ ...example.digitalContents[0], stauts: 1 }] }],
    [
      "mails[0].events[0].time",
      { mails: [{ ...example.mails[0], events: [{ event: "sent", timestamp: 1, time: 1 }] }] },
    ],
    ['clients[0]["ip allow list"]', { clients: [{ ...exampleClient, "ip allow list": [] }] }],
  ])("names %s", (path, json) => {
    expect(problems(json)).toContain(`${path}: Unrecognized key`);
  });

  it("never imports a misspelt allow-list as an empty one", async () => {
    const id = "misspelt-allow-list-1";
    const json = { clients: [{ ...exampleClient, id, ipAllowList: ["10.9.9.9"] }] };
    await expect(importData(json)).rejects.toThrow();
    expect(await db().select().from(schema.clients).where(eq(schema.clients.id, id)).get()).toBeUndefined();
  });
});

describe("__proto__ keys are refused, never dropped", () => {
  const client = (extra: string) => fromJson(`{"clients": [${JSON.stringify(exampleClient).slice(0, -1)}, ${extra}}]}`);

  it.each([
    ['"css": {"__proto__": {"color": "red"}}', "clients[0].css.__proto__"],
    ['"termsCss": {"__proto__": "x"}', "clients[0].termsCss.__proto__"],
    ['"css": {"button": {"__proto__": "x"}}', "clients[0].css.button.__proto__"],
    ['"fields": {"__proto__": true}', "clients[0].fields.__proto__"],
    ['"rateLimit": {"limit": 5, "windowSeconds": 60, "__proto__": {}}', "clients[0].rateLimit.__proto__"],
  ])("%s", (extra, path) => {
    expect(problems(client(extra))).toEqual([
      expect.stringMatching(new RegExp(`^${path.replace(/[.[\]]/g, "\\$&")}: `)),
    ]);
  });

  it("in a user's addresses and at the top level", () => {
    const user = JSON.stringify(exampleUser).slice(0, -1);
    expect(problems(fromJson(`{"users": [${user}, "addresses": {"__proto__": {}}}]}`))).toEqual([
      expect.stringMatching(/^users\[0\]\.addresses\.__proto__: /),
    ]);
    expect(problems(fromJson('{"__proto__": {"admin": true}}'))).toEqual(["__proto__: Unrecognized key"]);
  });
});

describe("size limits", () => {
  const bytes = (n: number, unit = "a") => unit.repeat(n / new TextEncoder().encode(unit).length);

  it.each([
    ["clients[0].css", { css: { rules: bytes(60_000) } }],
    ["clients[0].css", { css: { rules: bytes(3_000_000) } }],
    ["clients[0].termsCss", { termsCss: Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`k${i}`, "red"])) }],
    ["clients[0].css.font", { css: { font: bytes(LIMITS.cssValue + 1) } }],
    ["clients[0].name", { name: bytes(256, "ø") }],
    ["clients[0].alias", { alias: bytes(LIMITS.text + 1) }],
    ["clients[0].redirectUris", { redirectUris: Array(LIMITS.redirectUris + 1).fill("https://x.example/cb") }],
    ["clients[0].redirectUris[0]", { redirectUris: [`https://x.example/${bytes(1007)}`] }],
    ["clients[0].ipWhitelist", { ipWhitelist: Array(LIMITS.ipAllowList + 1).fill("192.0.2.1") }],
    ["clients[0].resources", { resources: Array(LIMITS.resources + 1).fill("api.example") }],
    ["clients[0].fields.names", { fields: { names: bytes(65) } }],
    ["clients[0].signingSecret", { signingSecret: bytes(514, "ø") }],
    ["clients[0].grantTypes", { grantTypes: Array(2000).fill("password") }],
    ["clients[0].name", { name: "lone \ud800 surrogate" }],
    ["clients[0].redirectUris[0]", { redirectUris: [`https://x.example/${"\ud800".repeat(334)}`] }],
  ])("refuses an oversized %s with its path", (path, overrides) => {
    const found = problems({ clients: [{ ...exampleClient, defaultRedirectUri: null, ...overrides }] });
    expect(found).toContainEqual(expect.stringMatching(new RegExp(`^${path.replace(/[.[\]]/g, "\\$&")}: `)));
  });

  it.each([
    ["users[0].displayName", { displayName: bytes(256) }],
    ["users[0].photo", { photo: bytes(LIMITS.url + 2, "ø") }],
    [
      "users[0].addresses",
      { addresses: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`t${"x".repeat(i)}`, {}])) },
    ],
  ])("refuses an oversized %s with its path", (path, overrides) => {
    expect(problems({ users: [{ ...exampleUser, ...overrides }] })).toEqual([
      expect.stringMatching(new RegExp(`^${path.replace(/[.[\]]/g, "\\$&")}: `)),
    ]);
  });

  it("keeps the largest rows the limits allow within one D1 statement, and D1 runs them", async () => {
    const clientId = `largest-${crypto.randomUUID().slice(0, 8)}`;
    const userId = 880_000 + Math.floor(Math.random() * 10_000);
    const uri = (i: number) => `https://x${String(i).padStart(2, "0")}.example/${"p".repeat(1024 - 20)}`;
    const text = `${"ø".repeat(127)}a`;
    const largestCss = Object.fromEntries(["r0", "r1", "r2", "r3"].map((key) => [key, bytes(1015)]));
    const file = importFileSchema.parse({
      clients: [
        {
          id: clientId,
          secret: bytes(512),
          signingSecret: bytes(512),
          name: text,
          alias: text,
          domain: text,
          merchantId: 10,
          redirectUris: Array.from({ length: LIMITS.redirectUris }, (_, i) => uri(i)),
          defaultRedirectUri: uri(0),
          fields: Object.fromEntries(CLIENT_FIELDS.map((name) => [name, bytes(LIMITS.shortText)])),
          css: largestCss,
          termsCss: largestCss,
          grantTypes: [...GRANT_TYPES],
          ipWhitelist: Array(LIMITS.ipAllowList).fill("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255"),
          resources: Array(LIMITS.resources).fill(`${"r".repeat(253)}:65535`),
          rateLimit: { limit: 10_000_000, windowSeconds: 86_400 },
        },
      ],
      users: [
        {
          ...exampleUser,
          userId,
          uuid: crypto.randomUUID(),
          id: bytes(64),
          email: `${"e".repeat(64)}@${"d".repeat(63)}.${"d".repeat(63)}.${"d".repeat(50)}.example`,
          emails: [],
          name: { givenName: text, familyName: text, formatted: text },
          displayName: text,
          preferredUsername: text,
          url: bytes(LIMITS.url),
          photo: bytes(LIMITS.url),
          clients: [clientId],
        },
      ],
      products: [
        {
          ...example.products[0],
          productId: userId,
          clientId,
          code: text,
          name: text,
          description: bytes(LIMITS.productDescription),
          url: bytes(LIMITS.url),
          purchaseUri: bytes(LIMITS.url),
        },
      ],
    });
    const statements = await buildImportStatements(db(), file, env.DATA_PROTECTION_KEY);
    const lines = toSqlScript(statements.map((s) => s.toSQL()))
      .trimEnd()
      .split("\n");
    const longest = Math.max(...lines.map((line) => new TextEncoder().encode(line).length));
    expect(longest).toBeGreaterThan(60_000);
    expect(longest).toBeLessThanOrEqual(100_000);
    await env.DB.batch(lines.map((line) => env.DB.prepare(line)));
    const stored = await db().select().from(schema.clients).where(eq(schema.clients.id, clientId)).get();
    expect(stored?.redirectUris).toHaveLength(LIMITS.redirectUris);
  });
});

describe("UUIDs are case-insensitive", () => {
  const user = (userId: number, uuid: string, email: string) => ({ ...exampleUser, userId, uuid, email, emails: [] });

  it("treats two UUIDs that differ only in letter case as duplicates", () => {
    const uuid = crypto.randomUUID();
    expect(
      problems({ users: [user(870_001, uuid, "a1@example.org"), user(870_002, uuid.toUpperCase(), "a2@example.org")] }),
    ).toEqual(["users[1].uuid: duplicate uuid"]);
  });

  it("stores them in lower case, so a re-import in another case cannot add a second user", async () => {
    const uuid = crypto.randomUUID();
    await importData({ users: [user(870_003, uuid.toUpperCase(), "a3@example.org")] });
    const stored = await db().select().from(schema.users).where(eq(schema.users.id, 870_003)).get();
    expect(stored?.uuid).toBe(uuid);
    await expect(importData({ users: [user(870_004, uuid.toUpperCase(), "a4@example.org")] })).rejects.toThrow();
    expect(await db().select().from(schema.users).where(eq(schema.users.id, 870_004)).get()).toBeUndefined();
  });
});
