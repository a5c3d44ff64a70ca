import { env } from "cloudflare:workers";
import { count, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../src/db/client";
import { buildImportStatements } from "../src/db/import";
import * as schema from "../src/db/schema";
import { toSqlScript } from "../src/db/sql-script";
import { describeImportErrors, importFileSchema } from "../src/schemas/import";
import { keyRing, openSecret, verifySecret } from "../src/security/data-protection";
import { verifyPassword } from "../src/security/password";
import example from "./fixtures/example-import.json";
import { createClient, importData } from "./helpers/seed";

const db = () => openDatabase(env.DB);

async function rowCounts() {
  const tables = [
    schema.merchants,
    schema.clients,
    schema.users,
    schema.userEmails,
    schema.userClients,
    schema.products,
    schema.digitalContents,
    schema.mails,
    schema.mailEvents,
  ];
  return Promise.all(tables.map(async (t) => (await db().select({ n: count() }).from(t).get())!.n));
}

function problems(json: unknown): string[] {
  const result = importFileSchema.safeParse(json);
  return result.success ? [] : describeImportErrors(result.error);
}

describe("import file format", () => {
  it("accepts the shared example file unchanged", () => {
    expect(problems(example)).toEqual([]);
  });

  it("imports it, and a second import updates instead of duplicating", async () => {
    await importData(example);
    const before = await rowCounts();
    await importData(example);
    expect(await rowCounts()).toEqual(before);
    const user = await db().select().from(schema.users).where(eq(schema.users.id, 1001)).get();
    expect(user).toMatchObject({ uuid: example.users[0]!.uuid, status: 1, email: "ingrid.hansen@example.org" });
    const mail = await db().select().from(schema.mails).where(eq(schema.mails.token, "a9f3c1")).get();
    expect(
      await db().select().from(schema.mailEvents).where(eq(schema.mailEvents.mailId, mail!.id)).all(),
    ).toHaveLength(1);
  });

  it("stores passwords as PBKDF2 hashes and client secrets as keyed hashes, never in plain text", async () => {
    await importData(example);
    const user = (await db().select().from(schema.users).where(eq(schema.users.id, 1001)).get())!;
    expect(user.passwordHash).toMatch(/^pbkdf2-sha256\$100000\$[\w-]{22}\$[\w-]{43}$/);
    expect(await verifyPassword("correct horse battery staple", user.passwordHash)).toBe(true);
    expect(await verifyPassword("correct horse battery stapl", user.passwordHash)).toBe(false);
    const client = (await db()
      .select()
      .from(schema.clients)
      .where(eq(schema.clients.id, example.clients[0]!.id))
      .get())!;
    expect(JSON.stringify(client)).not.toContain(example.clients[0]!.secret);
    expect(JSON.stringify(client)).not.toContain(example.clients[0]!.signingSecret);
    expect(await verifySecret(keyRing(env), example.clients[0]!.secret, client.secretHash)).toBe("current");
    expect(await openSecret(keyRing(env), client.signingSecretSealed!)).toBe(example.clients[0]!.signingSecret);
  });

  it("moves a client's user connections along when the client changes merchant", async () => {
    const client = await createClient();
    await importData({ users: [{ ...example.users[1], clients: [client.id] }] });
    await importData({ clients: [{ id: client.id, secret: client.secret, name: "Moved", merchantId: 20 }] });
    const connection = await db()
      .select()
      .from(schema.userClients)
      .where(eq(schema.userClients.clientId, client.id))
      .get();
    expect(connection).toMatchObject({ userId: 1002, merchantId: 20 });
  });

  it("keeps a stored password when a re-import gives none", async () => {
    const { password: _, ...withoutPassword } = example.users[1]!;
    await importData({ users: [withoutPassword] });
    const user = (await db().select().from(schema.users).where(eq(schema.users.id, 1002)).get())!;
    expect(await verifyPassword("another long passphrase", user.passwordHash)).toBe(true);
  });
});

describe("value sets: files without a version and version 2", () => {
  const [subscription, content] = example.products as unknown as [Record<string, unknown>, Record<string, unknown>];
  const [grant] = example.digitalContents as unknown as [Record<string, unknown>];

  it("reads a file without a version in the earlier sets and stores SPiD's", () => {
    const parsed = importFileSchema.parse({
      products: [
        { ...subscription, productId: 1, type: 1 },
        { ...subscription, productId: 2, type: 2 },
        { ...content, productId: 3, type: 3, parentProductId: undefined },
      ],
      digitalContents: [0, 1, -1, -2].map((status, i) => ({ ...grant, userProductId: 10 + i, productId: 3, status })),
    });
    expect(parsed.products.map((p) => p.type)).toEqual([0, 2, 1]);
    expect(parsed.digitalContents.map((d) => d.status)).toEqual([0, 3, -1, -2]);
    // Converted once: read again, it is a version 2 file and stays as it is.
    expect(importFileSchema.parse(parsed)).toEqual(parsed);
  });

  it("stores the shared example file's digital content product and its grant in SPiD's sets", async () => {
    await importData(example);
    const product = await db().select().from(schema.products).where(eq(schema.products.id, 502)).get();
    expect(product?.type).toBe(1);
    const held = await db().select().from(schema.digitalContents).where(eq(schema.digitalContents.id, 9001)).get();
    expect(held?.status).toBe(3);
  });

  it("takes version 2's values as they are, and a price as an integer string", () => {
    const parsed = importFileSchema.parse({
      version: 2,
      products: [0, 1, 2, 3, 4].map((type) => ({ ...subscription, productId: 10 + type, type, price: "9900" })),
      digitalContents: [3, 0, -1, -2].map((status, i) => ({ ...grant, userProductId: 20 + i, productId: 11, status })),
    });
    expect(parsed.products.map((p) => [p.type, p.price])).toEqual([0, 1, 2, 3, 4].map((type) => [type, 9900]));
    expect(parsed.digitalContents.map((d) => d.status)).toEqual([3, 0, -1, -2]);
  });

  it.each([
    ["a type outside the earlier set", { products: [{ ...subscription, type: 4 }] }, "products[0].type", "1, 2, 3"],
    [
      "a type outside SPiD's set",
      { version: 2, products: [{ ...subscription, type: 5 }] },
      "products[0].type",
      "0, 1, 2, 3, 4",
    ],
    [
      "an earlier status in a version 2 file",
      { version: 2, digitalContents: [{ ...grant, status: 1 }] },
      "digitalContents[0].status",
      "3, 0, -1, -2",
    ],
    [
      "SPiD's status in a file without a version",
      { digitalContents: [{ ...grant, status: 3 }] },
      "digitalContents[0].status",
      "1, 0, -1, -2",
    ],
    ["an unknown version", { version: 3 }, "version", ""],
    [
      "a price that is no integer string",
      { version: 2, products: [{ ...subscription, price: "99.00" }] },
      "products[0].price",
      "",
    ],
  ])("refuses %s, naming the path and the values it takes", (_, json, path, values) => {
    const found = problems(json).find((p) => p.startsWith(`${path}:`));
    expect(found).toBeDefined();
    expect(found).toContain(values);
  });
});

describe("redirect URIs", () => {
  const withRedirect = (uri: string) => ({
    clients: [{ ...example.clients[0], redirectUris: [uri], defaultRedirectUri: null }],
  });

  it.each([
    "https://x.example/cb?next=https://evil.example",
    "https://x.example/cb?next=//evil.example",
    "https://x.example/cb?next=%2F%2Fevil.example",
    "https://x.example/cb?next=https%253A%252F%252Fevil.example",
    "https://x.example/cb?next=/%5Cevil.example",
    "https://x.example/cb?next=%5C%5Cevil.example",
    "https://x.example/cb?next=/%09/evil.example",
    "https://x.example/cb?next=javascript:alert%281%29",
    "https://x.example/cb?https://evil.example",
    "https://x.example//evil.example/cb",
    "https://x.example/go/https://evil.example",
    "https://x.example/cb?next=/\\evil.example",
    "https://x.example/cb#token",
    "https://ok.example/cb?next=%20https://evil.example",
    "https://ok.example/cb?next=+https://evil.example",
    "https://ok.example/cb?next=%01https://evil.example",
    "https://ok.example/cb?next=%00https://evil.example",
    "https://ok.example/cb?next=%20//evil.example",
    "https://ok.example/cb?next=%1F%20%09//evil.example",
    "https://ok.example/cb?next=%2520https://evil.example",
    "https://ok.example/cb?x=%zz&next=%E2%80%8B%20https://evil.example%20",
    "https://ok.example/cb?next=%252Bhttps://evil.example",
    "https://ok.example/cb?%20https://evil.example=1",
    "https://ok.example/cb?next=javascript%3Aalert%281%29%20",
    "https://ok.example/go/https:%20//evil.example",
    "https://ok.example/%20//evil.example",
    "https://ok.example/%00/%20/evil.example",
    "https://ok.example/cb?next=\u0001https://evil.example",
    "https://ok.example/cb\u007f",
    "https://ok.example/cb?x=a%26next%3D%2F%2Fevil.example",
    "https://ok.example/cb?next=%2Faccount%3Freturn%3Dhttps%3A%2F%2Fevil.example",
    "https://ok.example/cb?next=web+https://evil.example",
    "https://ok.example/go/http:evil.example",
    "https://ok.example/go/javascript:alert%281%29",
    `https://ok.example/cb?next=${Array.from({ length: 10 }).reduce<string>((s) => encodeURIComponent(s), "//evil.example")}`,
  ])("refuses %s", (uri) => {
    expect(problems(withRedirect(uri)).some((p) => p.startsWith("clients[0].redirectUris[0]:"))).toBe(true);
  });

  it.each([
    "https://x.example/cb",
    "https://x.example/",
    "https://x.example/cb?discount=10%25",
    "https://x.example/a//b",
    "https://x.example/wiki/File:Example.png",
    "https://x.example/cb?state=abc&lang=nb_NO",
    "https://x.example:8443/oauth/done",
    "https://x.example/cb?q=a+b&t=10:30",
    "https://x.example/cb?next=%2Fhome%2Fnews",
    "https://x.example/cb?next=%20%2Fhome",
    "https://x.example/%20a/b",
  ])("accepts %s", (uri) => {
    expect(problems(withRedirect(uri))).toEqual([]);
  });
});

describe("bad import files", () => {
  it.each([
    ["an invalid e-mail", { users: [{ ...example.users[1], email: "not-an-email" }] }, "users[0].email"],
    ["an unknown user status", { users: [{ ...example.users[1], status: 7 }] }, "users[0].status"],
    [
      "a plain-http redirect URI",
      { clients: [{ ...example.clients[0], merchantId: 10, redirectUris: ["http://x.example/cb"] }] },
      "clients[0].redirectUris[0]",
    ],
    [
      "a redirect URI with a forbidden character",
      { clients: [{ ...example.clients[0], redirectUris: ["https://x.example/c@b"] }] },
      "clients[0].redirectUris[0]",
    ],
    [
      "a redirect URI embedding another",
      { clients: [{ ...example.clients[0], redirectUris: ["https://x.example/cb?next=https://evil.example"] }] },
      "clients[0].redirectUris[0]",
    ],
    [
      "a default redirect that is not registered",
      { clients: [{ ...example.clients[0], defaultRedirectUri: "https://other.example/" }] },
      "clients[0].defaultRedirectUri",
    ],
    [
      "an unknown grant type",
      { clients: [{ ...example.clients[0], grantTypes: ["implicit"] }] },
      "clients[0].grantTypes[0]",
    ],
    ["a duplicate client id", { clients: [example.clients[0], example.clients[0]] }, "clients[1].id"],
    [
      "a merchant reference the file cannot resolve",
      { merchants: [example.merchants[0]], clients: [example.clients[2]] },
      "clients[0].merchantId",
    ],
    ["an unknown top-level key", { ...example, customers: [] }, "customers"],
    ["a price that is not minor units", { products: [{ ...example.products[0], price: 149.5 }] }, "products[0].price"],
    ["a malformed datetime", { users: [{ ...example.users[1], published: "yesterday" }] }, "users[0].published"],
    [
      "a timestamp in microseconds",
      { users: [{ ...example.users[1], verified: 1_700_000_000_000_000 }] },
      "users[0].verified",
    ],
  ])("names the offending path for %s", (_, json, path) => {
    const found = problems(json);
    expect(found.length).toBeGreaterThan(0);
    expect(found.some((p) => p.startsWith(`${path}:`))).toBe(true);
  });

  it("writes nothing when the database refuses any row of the batch", async () => {
    const file = importFileSchema.parse({
      merchants: [{ merchantId: 99, name: "Half Written" }],
      users: [
        {
          userId: "9901",
          uuid: crypto.randomUUID(),
          status: 1,
          published: "2024-01-01 00:00:00",
          updated: "2024-01-01 00:00:00",
          clients: ["no-such-client-000"],
        },
      ],
    });
    const statements = await buildImportStatements(db(), file, env.DATA_PROTECTION_KEY);
    await expect(db().batch(statements as [never])).rejects.toThrow();
    expect(await db().select().from(schema.merchants).where(eq(schema.merchants.id, 99)).get()).toBeUndefined();
    expect(await db().select().from(schema.users).where(eq(schema.users.id, 9901)).get()).toBeUndefined();
  });
});

describe("SQL script for wrangler d1 execute", () => {
  it("carries hostile text intact, one statement per line", async () => {
    const hostile = 'O\'Brien; DROP TABLE users; -- "quoted"\nnew line ? æøå 🙂';
    const file = importFileSchema.parse({ merchants: [{ merchantId: 77, name: hostile }] });
    const statements = await buildImportStatements(db(), file, env.DATA_PROTECTION_KEY);
    const lines = toSqlScript(statements.map((s) => s.toSQL()))
      .trimEnd()
      .split("\n");
    expect(lines).toHaveLength(statements.length);
    await env.DB.batch(lines.map((line) => env.DB.prepare(line)));
    const merchant = await db().select().from(schema.merchants).where(eq(schema.merchants.id, 77)).get();
    expect(merchant?.name).toBe(hostile);
    expect((await db().select({ n: count() }).from(schema.users).get())!.n).toBeGreaterThan(0);
  });
});
