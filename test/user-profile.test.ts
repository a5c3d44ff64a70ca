/**
 * Creating users and changing profiles through the API (SPiD's POST /user and POST /user/{userId};
 * docs/management.md): only the fields sent change, every refusal by role and by value, the
 * Idempotency-Key on creates, and the audit entry of each write.
 */
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { Browser, expectPage } from "./helpers/browser";
import { bearer, call, container, serverToken, userToken, webClient } from "./helpers/http";
import { mailbox } from "./helpers/mailbox";
import { createClient, createUser } from "./helpers/seed";

const FORM = { "Content-Type": "application/x-www-form-urlencoded" };
let nextUser = 23_000 + Math.floor(Math.random() * 50) * 20;
let web: string;
let admin: string;
beforeAll(async () => {
  web = await serverToken(webClient);
  admin = await serverToken(await createClient({ admin: true }));
});
afterEach(() => vi.restoreAllMocks());

const fresh = () => `new-${crypto.randomUUID()}@example.org`;

function create(token: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
  return call("/api/2/user", {
    method: "POST",
    headers: { ...bearer(token), ...FORM, ...headers },
    body: new URLSearchParams(fields).toString(),
  });
}

function update(token: string, userId: number | string, fields: Record<string, string>) {
  return call(`/api/2/user/${userId}`, {
    method: "POST",
    headers: { ...bearer(token), ...FORM },
    body: new URLSearchParams(fields).toString(),
  });
}

async function auditOf(query: string) {
  const res = await call(`/api/2/audit?${query}`, { headers: bearer(admin) });
  return (await container(res)).data as Record<string, any>[];
}

async function expectError(res: Response, status: number, description: string | RegExp) {
  expect(res.status).toBe(status);
  expect((await container(res)).error?.error_description).toMatch(description);
}

describe("POST /api/2/user", () => {
  it("creates an unverified user connected to the calling client, with the profile sent", async () => {
    const email = fresh();
    const res = await create(web, {
      email,
      displayName: "Nora N.",
      name: JSON.stringify({ givenName: "Nora", familyName: "Nilsen" }),
      addresses: JSON.stringify({ home: { streetAddress: "Kirkegata 3", postalCode: "0153", locality: "Oslo" } }),
      birthday: "1995-05-17",
      gender: "female",
      locale: "nb_NO",
    });
    expect(res.status).toBe(201);
    const user = (await container(res)).data;
    expect(user).toMatchObject({
      status: 0,
      email,
      emailVerified: false,
      emails: [{ value: email, primary: true, verified: false }],
      displayName: "Nora N.",
      name: { givenName: "Nora", familyName: "Nilsen", formatted: null },
      birthday: "1995-05-17",
      gender: "female",
      locale: "nb_NO",
      addresses: { home: expect.objectContaining({ streetAddress: "Kirkegata 3" }) },
    });
    const shown = await call(`/api/2/user/${user.userId}`, { headers: bearer(web) });
    expect((await container(shown)).data).toMatchObject({ email, displayName: "Nora N." });
    // The name is searchable at once (send the write's bookmark).
    const found = await call(`/api/2/users?familyName=nilsen&email=${email}`, {
      headers: { ...bearer(web), "x-d1-bookmark": res.headers.get("x-d1-bookmark")! },
    });
    expect((await container(found)).data.map((u: { userId: string }) => u.userId)).toEqual([user.userId]);

    const [entry] = await auditOf(`userId=${user.userId}`);
    expect(entry).toMatchObject({ action: "user.create", actor: "client", clientId: webClient.id });
    expect(entry!.detail.fields).toEqual(
      expect.arrayContaining(["displayName", "name.givenName", "name.familyName", "addresses.home", "birthday"]),
    );
    expect(JSON.stringify(entry)).not.toContain("Nora");
  });

  it("refuses an address that is taken, in any case, and creates nothing", async () => {
    const email = fresh();
    expect((await create(web, { email })).status).toBe(201);
    await expectError(await create(web, { email: email.toUpperCase() }), 409, "The email address is not available");
    await expectError(
      await create(web, { email: "ingrid.hansen@example.org" }),
      409,
      "The email address is not available",
    );
  });

  it.each([
    ["no e-mail", {}, /Parameter 'email' is missing/],
    ["not an e-mail", { email: "not-an-address" }, /not an e-mail address/],
    ["a password", { email: "x@example.org", password: "secret secret" }, /Unknown parameter 'password'/],
    ["a name that is not JSON", { email: "x@example.org", name: "Nora" }, /Parameter 'name'/],
    ["a name with an unknown part", { email: "x@example.org", name: '{"middleName":"X"}' }, /Parameter 'name'/],
    ["the current location as an address type", { email: "x@example.org", addresses: '{"current":{}}' }, /addresses/],
    ["a birthday in the future", { email: "x@example.org", birthday: "2999-01-01" }, /birthday/],
    ["an unknown gender", { email: "x@example.org", gender: "unknown" }, /gender/],
    ["a display name over 255 bytes", { email: "x@example.org", displayName: "å".repeat(128) }, /displayName/],
    ["a javascript: photo", { email: "x@example.org", photo: "javascript:alert(1)" }, /photo/],
    ["a url that is no URL", { email: "x@example.org", url: "http://" }, /url/],
  ])("refuses %s with a 400 that names it", async (_, fields, description) => {
    await expectError(await create(web, fields as Record<string, string>), 400, description);
  });

  it("mails a sign-in link to the new address when asked, to a registered redirect URI only", async () => {
    const box = mailbox();
    const email = fresh();
    const res = await create(web, { email, redirectUri: webClient.redirectUris[0]! });
    expect(res.status).toBe(201);
    expect(await box.link(email)).toMatch(/^\/oauth\/signin\?token=/);

    const other = fresh();
    await expectError(
      await create(web, { email: other, redirectUri: "https://evil.example/" }),
      400,
      /redirectUri.* not registered/,
    );
    expect((await create(web, { email: other })).status).toBe(201);
  });

  it("answers a retried create with the same Idempotency-Key by the user the first made", async () => {
    const key = crypto.randomUUID();
    const email = fresh();
    const first = await create(web, { email, displayName: "Once" }, { "Idempotency-Key": key });
    const again = await create(web, { email, displayName: "Once" }, { "Idempotency-Key": key });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    const [made, answered] = [(await container(first)).data, (await container(again)).data];
    expect(answered.userId).toBe(made.userId);
    expect(await auditOf(`userId=${made.userId}&action=user.create`)).toHaveLength(1);

    await expectError(
      await create(web, { email: fresh() }, { "Idempotency-Key": key }),
      422,
      "The Idempotency-Key was used with another request",
    );
    // Keys are the client's own: another client's same key is another create.
    const app = await serverToken(await createClient());
    expect((await create(app, { email: fresh() }, { "Idempotency-Key": key })).status).toBe(201);
    await expectError(
      await create(web, { email: fresh() }, { "Idempotency-Key": "with space" }),
      400,
      /Idempotency-Key/,
    );
  });

  it("makes one user of concurrent creates with the same Idempotency-Key", async () => {
    const key = crypto.randomUUID();
    const email = fresh();
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => create(web, { email }, { "Idempotency-Key": key })),
    );
    expect(answers.map((res) => res.status)).toEqual(Array(8).fill(201));
    const ids = new Set(await Promise.all(answers.map(async (res) => (await container(res)).data.userId)));
    expect(ids.size).toBe(1);
  });

  it("takes a server token only", async () => {
    expect((await create(await userToken(), { email: fresh() })).status).toBe(403);
  });
});

describe("POST /api/2/user/{userId}", () => {
  async function profiled() {
    const userId = nextUser++;
    await createUser(userId, {
      displayName: "Before",
      name: { givenName: "Per", familyName: "Olsen" },
      birthday: "1980-01-02",
      addresses: { home: { streetAddress: "Storgata 9", locality: "Oslo" } },
    });
    return userId;
  }

  it("changes only the fields sent", async () => {
    const userId = await profiled();
    const res = await update(web, userId, { displayName: "After" });
    expect(res.status).toBe(200);
    const user = (await container(res)).data;
    expect(user).toMatchObject({
      displayName: "After",
      name: { givenName: "Per", familyName: "Olsen" },
      birthday: "1980-01-02",
      addresses: { home: expect.objectContaining({ streetAddress: "Storgata 9" }) },
    });
    expect(user.updated).not.toBe("2024-01-01 00:00:00");
    const [entry] = await auditOf(`userId=${userId}&action=user.update`);
    expect(entry).toMatchObject({ actor: "client", detail: { fields: ["displayName"] } });
  });

  it("changes one part of the name, one address type, and clears a field sent empty", async () => {
    const userId = await profiled();
    await update(web, userId, {
      name: JSON.stringify({ familyName: "Berg" }),
      addresses: JSON.stringify({ delivery: { streetAddress: "Havnegata 1", locality: "Bergen" } }),
    });
    let user = (await container(await update(web, userId, { displayName: "" }))).data;
    expect(user.name).toMatchObject({ givenName: "Per", familyName: "Berg" });
    expect(user.displayName).toBeNull();
    expect(Object.keys(user.addresses).sort()).toEqual(["delivery", "home"]);
    user = (await container(await update(web, userId, { addresses: JSON.stringify({ home: null }) }))).data;
    expect(Object.keys(user.addresses)).toEqual(["delivery"]);
  });

  it("never changes the password; an address or a phone number only by an admin; refuses an empty change", async () => {
    const userId = await profiled();
    await expectError(
      await update(web, userId, { email: "new@example.org", redirectUri: webClient.redirectUris[0]! }),
      401,
      "Your client doesn't have administration rights for this client",
    );
    await expectError(
      await update(web, userId, { phoneNumber: "+4712345678" }),
      401,
      "Your client doesn't have administration rights for this client",
    );
    await expectError(await update(web, userId, { password: "a new passphrase" }), 400, /Unknown parameter/);
    await expectError(await update(web, userId, {}), 400, "No field to change was sent");
  });

  it("is the connected client's, an admin client's of its merchant, or the operator's", async () => {
    const userId = await profiled();
    const sameMerchant = await serverToken(await createClient());
    await expectError(
      await update(sameMerchant, userId, { displayName: "X" }),
      403,
      "Client is not authorized to access this user",
    );
    expect((await update(admin, userId, { displayName: "By admin" })).status).toBe(200);
    await expectError(
      await update(await serverToken(await createClient({ merchantId: 20 })), userId, { displayName: "X" }),
      404,
      "User not found",
    );
    expect((await update(await userToken(), 1001, { displayName: "X" })).status).toBe(403);
    const deleted = nextUser++;
    await createUser(deleted, { status: -3 });
    await expectError(await update(web, deleted, { displayName: "X" }), 409, /deleted/);
  });
});

describe("changing a user's sign-in address (POST /api/2/user/{userId} with email)", { timeout: 30_000 }, () => {
  const REDIRECT = "https://test.example/callback";

  async function confirm(link: string) {
    const browser = new Browser();
    const page = await expectPage(await browser.get(link), 200, "Confirm sign-in");
    return browser.submit(page, {});
  }

  async function freshUser(overrides: Record<string, unknown> = {}) {
    const userId = nextUser++;
    const user = await createUser(userId, { emailVerified: "2024-01-02 00:00:00", ...overrides });
    return { userId, ...user };
  }

  it("adds the address unverified, mails it a link, and makes it the primary address (the old one kept) when used", async () => {
    const receiver = `https://up-${crypto.randomUUID().slice(0, 8)}.receiver.test/callbacks`;
    const told = await createClient({ callbackUrl: receiver, signingSecret: "address-change-signing-secret" });
    const { userId, email: before } = await freshUser({ clients: [webClient.id, told.id] });
    const box = mailbox();
    const next = fresh();
    const res = await update(admin, userId, { email: next, redirectUri: REDIRECT });
    expect(res.status).toBe(200);
    const pending = (await container(res)).data;
    expect(pending.email).toBe(before);
    expect(pending.emails).toEqual(
      expect.arrayContaining([expect.objectContaining({ value: next, primary: false, verified: false })]),
    );
    const [entry] = await auditOf(`userId=${userId}&action=user.update`);
    expect(entry).toMatchObject({ actor: "admin", detail: { fields: ["email"], email: "added" } });
    expect(JSON.stringify(entry)).not.toContain(next);

    const used = await confirm(await box.link(next));
    // Confirmed, and on to the client (its consent page first: the back office asks for consent).
    expect(used.status).toBe(303);
    // Read as fresh as the confirmation's write (past the isolate's cached copy).
    const bookmark = { "x-d1-bookmark": used.headers.get("x-d1-bookmark") ?? "" };
    expect(bookmark["x-d1-bookmark"]).not.toBe("");
    const changed = (await container(await call(`/api/2/user/${userId}`, { headers: { ...bearer(web), ...bookmark } })))
      .data;
    expect(changed.email).toBe(next);
    expect(changed.emailVerified).not.toBe(false);
    // The old address stays, as a secondary one: a mistaken change locks nobody out.
    expect(changed.emails).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ value: before, primary: false }),
        expect.objectContaining({ value: next, primary: true, verified: true }),
      ]),
    );
    // The user's clients are told, by callback.
    await vi.waitFor(
      async () => {
        const arrived = (await (await env.RECEIVER.fetch("https://receiver/")).json()) as {
          url: string;
          body: string;
        }[];
        const body = arrived.find((arrival) => arrival.url === receiver)?.body;
        if (!body) throw new Error("no callback yet");
        const payload = JSON.parse(atob(body.split(".")[1]!.replace(/-/g, "+").replace(/_/g, "/")));
        expect(payload.entry).toEqual([expect.objectContaining({ userId, changedFields: "email" })]);
      },
      { timeout: 15_000, interval: 200 },
    );
  });

  it("makes an address the user has verified the primary one at once, with no link", async () => {
    const other = fresh();
    const { userId, email: before } = await freshUser({ emails: [{ value: other, verified: true }] });
    const box = mailbox();
    const res = await update(admin, userId, { email: other, redirectUri: REDIRECT });
    expect(res.status).toBe(200);
    const user = (await container(res)).data;
    expect(user).toMatchObject({ email: other });
    expect(user.emails).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ value: other, primary: true }),
        expect.objectContaining({ value: before, primary: false }),
      ]),
    );
    expect(box.printed()).not.toContain(`mail to ${other}:`);
    const [entry] = await auditOf(`userId=${userId}&action=user.update`);
    expect(entry).toMatchObject({ detail: { fields: ["email"], email: "proved" } });
  });

  it("lets only the newest change confirm: an earlier change's address and link end", async () => {
    const { userId } = await freshUser();
    const box = mailbox();
    const [first, second] = [fresh(), fresh()];
    expect((await update(admin, userId, { email: first, redirectUri: REDIRECT })).status).toBe(200);
    const firstLink = await box.link(first);
    // The next change within the minute is mailed at once: the earlier link has ended.
    const res = await update(admin, userId, { email: second, redirectUri: REDIRECT });
    expect(res.status).toBe(200);
    const emails = (await container(res)).data.emails.map((e: { value: string }) => e.value);
    expect(emails).toContain(second);
    expect(emails).not.toContain(first);
    await box.link(second);
    await expectPage(await new Browser().get(firstLink), 410, "This link no longer works");
    // The first address is free again.
    expect((await create(web, { email: first })).status).toBe(201);
  });

  it("refuses an address taken by another user, a bad one, one without or with a foreign redirectUri, and changes nothing", async () => {
    const { userId, email } = await freshUser();
    const { email: taken } = await freshUser();
    await expectError(
      await update(admin, userId, { email: taken, redirectUri: REDIRECT }),
      409,
      "The email address is not available",
    );
    await expectError(
      await update(admin, userId, { email: "not an address", redirectUri: REDIRECT }),
      400,
      /not an e-mail address/,
    );
    await expectError(
      await update(admin, userId, { email: fresh() }),
      400,
      "Parameter 'redirectUri' is missing: the confirmation link leads there",
    );
    await expectError(
      await update(admin, userId, { email: fresh(), redirectUri: "https://evil.example/" }),
      400,
      /not registered/,
    );
    // The primary address itself: nothing to change.
    await expectError(
      await update(admin, userId, { email, redirectUri: REDIRECT }),
      400,
      "No field to change was sent",
    );
    const user = (await container(await call(`/api/2/user/${userId}`, { headers: bearer(web) }))).data;
    expect(user.emails).toHaveLength(1);
  });

  it("is an account change: not for an admin of one of the user's merchants, nor for a blocked user", async () => {
    const fjord = await createClient({ merchantId: 20 });
    const { userId } = await freshUser({ clients: [webClient.id, fjord.id] });
    await expectError(
      await update(admin, userId, { email: fresh(), redirectUri: REDIRECT }),
      403,
      /connected to another merchant too/,
    );
    const { userId: blocked } = await freshUser({ status: -2 });
    await expectError(await update(admin, blocked, { email: fresh(), redirectUri: REDIRECT }), 409, /cannot sign in/);
  });
});
