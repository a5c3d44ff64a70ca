/**
 * The copy of a user's parts in the user's row (users.parts, kept by migration 0031's triggers):
 * after every kind of write to every part's table, the User object read from the copy is the one
 * read from the tables themselves (as for a user not copied yet). And the user's version
 * (migration 0034), which every such write changes.
 */
import { env } from "cloudflare:workers";
import { and, eq, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../src/db/client";
import { findUserProfiles } from "../src/db/queries/users";
import { userAccounts, userAddresses, userClients, userEmails, userPhoneNumbers, users } from "../src/db/schema";
import { createClient, createUser } from "./helpers/seed";

const db = openDatabase(env.DB);
let nextUser = 1_200_000 + Math.floor(Math.random() * 1000) * 10;

/** The user's profile from the copy, and from the parts' tables (the copy set aside meanwhile). */
async function bothWays(userId: number) {
  const [fromCopy] = await findUserProfiles(db, [userId]);
  const [row] = await db.select({ parts: users.parts }).from(users).where(eq(users.id, userId));
  const parts = row!.parts;
  expect(parts).not.toBeNull();
  await db.update(users).set({ parts: null }).where(eq(users.id, userId));
  const [fromTables] = await findUserProfiles(db, [userId]);
  await db.update(users).set({ parts }).where(eq(users.id, userId));
  return { fromCopy: fromCopy!, fromTables: fromTables! };
}

async function expectCopyCurrent(userId: number) {
  const { fromCopy, fromTables } = await bothWays(userId);
  expect({ ...fromCopy, user: undefined }).toEqual({ ...fromTables, user: undefined });
  return fromCopy;
}

describe("the copy of a user's parts", () => {
  it("follows every insert, update and delete of each part, in each part's order", async () => {
    const userId = nextUser++;
    const client = await createClient({ merchantId: 20 });
    await createUser(userId, {
      emails: [{ value: `second${userId}@example.org`, type: "work" }],
      phoneNumber: "+4791234567",
      addresses: { home: { streetAddress: "Storgata 1", postalCode: "0155", locality: "Oslo", country: "NO" } },
    });
    expect((await expectCopyCurrent(userId)).emails).toHaveLength(2);

    await db.insert(userEmails).values({ userId, value: `third${userId}@example.org`, type: "other" });
    await db
      .update(userEmails)
      .set({ verified: true })
      .where(eq(userEmails.value, `second${userId}@example.org`));
    expect((await expectCopyCurrent(userId)).emails.map((e) => e.verified)).toContain(true);
    await db.delete(userEmails).where(eq(userEmails.value, `third${userId}@example.org`));
    expect((await expectCopyCurrent(userId)).emails).toHaveLength(2);

    await db.insert(userPhoneNumbers).values({ userId, value: "+4790000000", type: "work" });
    await db.update(userPhoneNumbers).set({ primary: true }).where(eq(userPhoneNumbers.value, "+4790000000"));
    expect((await expectCopyCurrent(userId)).phoneNumbers).toHaveLength(2);
    await db.delete(userPhoneNumbers).where(eq(userPhoneNumbers.userId, userId));
    expect((await expectCopyCurrent(userId)).phoneNumbers).toEqual([]);

    // Addresses come by type, then as written: "delivery" before "home".
    await db.insert(userAddresses).values({ userId, type: "delivery", locality: "Bergen" });
    expect((await expectCopyCurrent(userId)).addresses.map((a) => a.type)).toEqual(["delivery", "home"]);
    await db.update(userAddresses).set({ region: "Vestland" }).where(eq(userAddresses.locality, "Bergen"));
    expect((await expectCopyCurrent(userId)).addresses[0]!.region).toBe("Vestland");
    await db.delete(userAddresses).where(and(eq(userAddresses.userId, userId), eq(userAddresses.type, "home")));
    expect((await expectCopyCurrent(userId)).addresses).toHaveLength(1);

    await db.insert(userAccounts).values({ userId, domain: "example.com", username: "ingrid" });
    await db.update(userAccounts).set({ accountUserId: "42" }).where(eq(userAccounts.userId, userId));
    expect((await expectCopyCurrent(userId)).accounts).toEqual([
      expect.objectContaining({ domain: "example.com", accountUserId: "42", username: "ingrid" }),
    ]);
    await db.delete(userAccounts).where(eq(userAccounts.userId, userId));
    expect((await expectCopyCurrent(userId)).accounts).toEqual([]);

    // Connections: by merchant, then client; a client moved to another merchant moves its connection.
    await db.insert(userClients).values({ userId, clientId: client.id, merchantId: 20 });
    expect((await expectCopyCurrent(userId)).connections.map((c) => c.merchantId)).toEqual([10, 20]);
    await db.update(userClients).set({ merchantId: 5 }).where(eq(userClients.clientId, client.id));
    expect((await expectCopyCurrent(userId)).connections.map((c) => c.merchantId)).toEqual([5, 10]);
    // A change of the user's status is copied into the connections, not into the copy: it stays as it was.
    await db.update(users).set({ status: 0 }).where(eq(users.id, userId));
    await expectCopyCurrent(userId);
    await db.delete(userClients).where(eq(userClients.clientId, client.id));
    expect((await expectCopyCurrent(userId)).connections.map((c) => c.merchantId)).toEqual([10]);
  });

  it("is the same for a user imported again, whose parts are deleted and written anew", async () => {
    const userId = nextUser++;
    await createUser(userId, { emails: [{ value: `old${userId}@example.org`, type: "work" }] });
    await createUser(userId, {
      emails: [{ value: `new${userId}@example.org`, type: "home" }],
      addresses: { invoice: { locality: "Trondheim" } },
    });
    const profile = await expectCopyCurrent(userId);
    expect(profile.emails.map((e) => e.value)).toEqual([`user${userId}@example.org`, `new${userId}@example.org`]);
    expect(profile.addresses.map((a) => a.locality)).toEqual(["Trondheim"]);
  });
});

describe("a user's version", () => {
  const versionOf = async (userId: number) =>
    (await db.select({ version: users.version }).from(users).where(eq(users.id, userId)))[0]!.version;

  it("is new after every kind of write to the user's row or to any part, never one seen before", async () => {
    const userId = nextUser++;
    const client = await createClient({ merchantId: 20 });
    await createUser(userId, { emails: [{ value: `second${userId}@example.org`, type: "work" }] });
    const email = `third${userId}@example.org`;
    const other = await createClient({ merchantId: 20 });
    const connection = and(eq(userClients.userId, userId), eq(userClients.clientId, client.id));
    // Each of migration 0034's triggers: the row's own update, and every part's insert, update and delete.
    const writes: [string, () => Promise<unknown>][] = [
      ["a column of the row", () => db.update(users).set({ displayName: "Changed" }).where(eq(users.id, userId))],
      ["the status", () => db.update(users).set({ status: -2 }).where(eq(users.id, userId))],
      ["an e-mail added", () => db.insert(userEmails).values({ userId, value: email, type: "other" })],
      ["an e-mail changed", () => db.update(userEmails).set({ verified: true }).where(eq(userEmails.value, email))],
      ["an e-mail removed", () => db.delete(userEmails).where(eq(userEmails.value, email))],
      ["a phone added", () => db.insert(userPhoneNumbers).values({ userId, value: "+4790000001", type: "work" })],
      [
        "a phone changed",
        () => db.update(userPhoneNumbers).set({ primary: true }).where(eq(userPhoneNumbers.userId, userId)),
      ],
      ["a phone removed", () => db.delete(userPhoneNumbers).where(eq(userPhoneNumbers.userId, userId))],
      ["an address added", () => db.insert(userAddresses).values({ userId, type: "delivery", locality: "Bergen" })],
      [
        "an address changed",
        () => db.update(userAddresses).set({ region: "Vestland" }).where(eq(userAddresses.userId, userId)),
      ],
      ["an address removed", () => db.delete(userAddresses).where(eq(userAddresses.userId, userId))],
      ["an account added", () => db.insert(userAccounts).values({ userId, domain: "example.com", username: "v" })],
      [
        "an account changed",
        () => db.update(userAccounts).set({ accountUserId: "42" }).where(eq(userAccounts.userId, userId)),
      ],
      ["an account removed", () => db.delete(userAccounts).where(eq(userAccounts.userId, userId))],
      ["a connection added", () => db.insert(userClients).values({ userId, clientId: client.id, merchantId: 20 })],
      ["a connection moved", () => db.update(userClients).set({ clientId: other.id }).where(connection)],
      [
        "a connection removed",
        () => db.delete(userClients).where(and(eq(userClients.userId, userId), eq(userClients.clientId, other.id))),
      ],
      ["the retention job's copy", () => db.run(sql`UPDATE ${users} SET parts = 'copy' WHERE id = ${userId}`)],
    ];
    const seen = [await versionOf(userId)];
    // A new user's row is written twice by its insert (the copy of its parts), so it has one already.
    expect(seen[0]).not.toBe(0);
    for (const [name, write] of writes) {
      await write();
      const version = await versionOf(userId);
      expect(seen, name).not.toContain(version);
      // JavaScript's numbers hold it exactly, as the page's statement compares what an isolate sent.
      expect(Number.isSafeInteger(version), name).toBe(true);
      seen.push(version);
    }
  });
});
