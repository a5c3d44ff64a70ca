/**
 * A user's phone number change (docs/management.md "Changing a phone number"): the number added
 * unverified and texted a code (the console's texts, as tests run as development), the code taken
 * once, within 10 minutes and 5 tries, the newest change's only; every refusal by role and value.
 */
import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { and, eq } from "drizzle-orm";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { openDatabase } from "../src/db/client";
import { callbackChanges, phoneVerifications } from "../src/db/schema";
import type { Bindings } from "../src/env";
import worker from "../src/index";
import { BASE, bearer, call, container, serverToken, webClient } from "./helpers/http";
import { createClient, createUser } from "./helpers/seed";

const FORM = { "Content-Type": "application/x-www-form-urlencoded" };
let nextUser = 35_000 + Math.floor(Math.random() * 50) * 20;
let admin: string;
let adminId: string;
beforeAll(async () => {
  const client = await createClient({ admin: true, callbackUrl: "https://phones.receiver.test/callbacks" });
  adminId = client.id;
  admin = await serverToken(client);
});
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

const post = (token: string, path: string, fields: Record<string, string>) =>
  call(path, { method: "POST", headers: { ...bearer(token), ...FORM }, body: new URLSearchParams(fields).toString() });
const change = (token: string, userId: number, phoneNumber: string) =>
  post(token, `/api/2/user/${userId}`, { phoneNumber });
const verify = (token: string, userId: number, phoneNumber: string, code: string) =>
  post(token, `/api/2/user/${userId}/phone/verify`, { phoneNumber, code });

async function expectError(res: Response, status: number, description: string | RegExp) {
  expect(res.status).toBe(status);
  expect((await container(res)).error?.error_description).toMatch(description);
}

/** The console's texts: the newest code texted to `number`. */
function texts() {
  const log = vi.spyOn(console, "log");
  return {
    code(number: string): string {
      const printed = log.mock.calls
        .map((args) => String(args[0]))
        .filter((text) => text.includes(`text to ${number}:`));
      const code = /: (\d{6}) is your code/.exec(printed.at(-1) ?? "")?.[1];
      if (!code) throw new Error(`no code was texted to ${number}`);
      return code;
    },
    count: (number: string) => log.mock.calls.filter((args) => String(args[0]).includes(`text to ${number}:`)).length,
  };
}

/** A user of the demo web client's merchant, with a verified number. */
async function userWithPhone() {
  const userId = nextUser++;
  await createUser(userId, {
    clients: [webClient.id, adminId],
    phoneNumber: "+4790000001",
    phoneNumberVerified: "2024-01-01 00:00:00",
    phoneNumbers: [{ value: "+4790000001", type: "mobile", primary: true, verified: true }],
  });
  return userId;
}

const numberOf = (user: Record<string, any>) => ({
  phoneNumber: user.phoneNumber,
  phoneNumberVerified: user.phoneNumberVerified,
  phoneNumbers: user.phoneNumbers.map((phone: Record<string, unknown>) => [phone.value, phone.primary, phone.verified]),
});

describe("changing a user's phone number", () => {
  it("adds the number unverified, texts it a code, and makes it the verified primary number when the code comes back", async () => {
    const sms = texts();
    const userId = await userWithPhone();
    const res = await change(admin, userId, "+47 912 34 567");
    expect(res.status).toBe(200);
    expect(numberOf((await container(res)).data)).toEqual({
      phoneNumber: "+4790000001",
      phoneNumberVerified: "2024-01-01 00:00:00",
      phoneNumbers: [
        ["+4790000001", true, true],
        ["+4791234567", false, false],
      ],
    });
    const code = sms.code("+4791234567");
    expect(code).toMatch(/^\d{6}$/);

    const wrong = code === "000000" ? "111111" : "000000";
    await expectError(await verify(admin, userId, "+4791234567", wrong), 400, "(4 tries left)");
    const verified = await verify(admin, userId, "+4791234567", code);
    expect(verified.status).toBe(200);
    expect(numberOf((await container(verified)).data)).toEqual({
      phoneNumber: "+4791234567",
      phoneNumberVerified: expect.not.stringMatching(/^2024/),
      phoneNumbers: [
        ["+4790000001", false, true],
        ["+4791234567", true, true],
      ],
    });
    // Once: the code is spent.
    await expectError(await verify(admin, userId, "+4791234567", code), 409, /No phone number change waits/);
    // The user's clients are told; the audit trail has both steps, never the code.
    const told = await openDatabase(env.DB)
      .select()
      .from(callbackChanges)
      .where(and(eq(callbackChanges.clientId, adminId), eq(callbackChanges.userId, userId)))
      .all();
    expect(told.map((row) => row.changedFields)).toContain("phoneNumber");
    const audit = (await container(await call(`/api/2/audit?userId=${userId}`, { headers: bearer(admin) }))).data;
    expect(audit.map((entry: Record<string, unknown>) => entry.action)).toEqual(["user.phone.verify", "user.update"]);
    expect(audit[1].detail).toEqual({ fields: ["phoneNumber"], phoneNumber: "pending" });
    expect(JSON.stringify(audit)).not.toContain(code);
  });

  it("takes five tries, then no code; and no code after ten minutes", async () => {
    const sms = texts();
    const userId = await userWithPhone();
    expect((await change(admin, userId, "+4791111111")).status).toBe(200);
    const code = sms.code("+4791111111");
    const wrong = code === "000000" ? "111111" : "000000";
    for (let i = 4; i >= 1; i--) await expectError(await verify(admin, userId, "+4791111111", wrong), 400, `(${i} tr`);
    await expectError(await verify(admin, userId, "+4791111111", wrong), 400, "no tries are left");
    await expectError(await verify(admin, userId, "+4791111111", code), 409, /too many wrong codes/);

    // A minute on, a new change texts a new code.
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 61_000 });
    expect((await change(admin, userId, "+4792222222")).status).toBe(200);
    const late = sms.code("+4792222222");
    vi.setSystemTime(Date.now() + 601_000);
    await expectError(await verify(admin, userId, "+4792222222", late), 409, /has expired/);
  });

  it("texts no new code within a minute, and takes only the newest change's code", async () => {
    const sms = texts();
    const userId = await userWithPhone();
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() });
    expect((await change(admin, userId, "+4793333333")).status).toBe(200);
    const first = sms.code("+4793333333");
    await expectError(await change(admin, userId, "+4794444444"), 409, /less than a minute ago/);
    expect(sms.count("+4794444444")).toBe(0);
    vi.setSystemTime(Date.now() + 61_000);
    const res = await change(admin, userId, "+4794444444");
    // The earlier change's number goes: only the newest waits.
    expect(numberOf((await container(res)).data).phoneNumbers).toEqual([
      ["+4790000001", true, true],
      ["+4794444444", false, false],
    ]);
    await expectError(await verify(admin, userId, "+4793333333", first), 400, /not the one texted/);
    expect((await verify(admin, userId, "+4794444444", sms.code("+4794444444"))).status).toBe(200);
  });

  it("refuses a plain client, a malformed number or code, and a blocked user", async () => {
    const userId = await userWithPhone();
    const web = await serverToken(webClient);
    const noRights = "Your client doesn't have administration rights for this client";
    await expectError(await change(web, userId, "+4795555555"), 401, noRights);
    await expectError(await verify(web, userId, "+4795555555", "123456"), 401, noRights);
    await expectError(await change(admin, userId, "95555555"), 400, /not a phone number/);
    await expectError(await change(admin, userId, "+47 call me"), 400, /not a phone number/);
    await expectError(await verify(admin, userId, "+4795555555", "12345"), 400, /not a 6-digit code/);
    await expectError(await verify(admin, userId, "+4795555555", "123456"), 409, /No phone number change waits/);
    // The user's own verified number is no change.
    await expectError(await change(admin, userId, "+4790000001"), 400, "No field to change was sent");
    const blocked = nextUser++;
    await createUser(blocked, { clients: [adminId], status: -2 });
    await expectError(await change(admin, blocked, "+4795555555"), 409, /cannot sign in/);
  });

  it("texts one code of racing changes, and one number for at most three users of a merchant an hour", async () => {
    const sms = texts();
    const userId = await userWithPhone();
    const raced = await Promise.all([change(admin, userId, "+4781000001"), change(admin, userId, "+4781000002")]);
    expect(raced.map((res) => res.status).sort()).toEqual([200, 409]);
    expect(sms.count("+4781000001") + sms.count("+4781000002")).toBe(1);

    const shared = "+4782000000";
    for (let i = 0; i < 3; i++) expect((await change(admin, await userWithPhone(), shared)).status).toBe(200);
    await expectError(await change(admin, await userWithPhone(), shared), 409, /for 3 users in the last hour/);
    expect(sms.count(shared)).toBe(3);
  });

  it("withdraws a waiting change when the user's own number is sent again; keeps numbers it did not add", async () => {
    const sms = texts();
    const userId = nextUser++;
    await createUser(userId, {
      clients: [adminId],
      phoneNumber: "+4790000001",
      phoneNumberVerified: "2024-01-01 00:00:00",
      phoneNumbers: [
        { value: "+4790000001", type: "mobile", primary: true, verified: true },
        { value: "+4790000002", type: "work", primary: false, verified: false },
      ],
    });
    expect((await change(admin, userId, "+44 (0)20 7946 0958")).status).toBe(200);
    const code = sms.code("+442079460958");
    const back = await change(admin, userId, "+4790000001");
    expect(back.status).toBe(200);
    // The imported unverified number stays; the change's number goes with it.
    expect(numberOf((await container(back)).data).phoneNumbers).toEqual([
      ["+4790000001", true, true],
      ["+4790000002", false, false],
    ]);
    await expectError(await verify(admin, userId, "+442079460958", code), 409, /No phone number change waits/);
  });

  it("ends a waiting change when the user is erased", async () => {
    const userId = await userWithPhone();
    expect((await change(admin, userId, "+4797777777")).status).toBe(200);
    const erased = await call(`/api/2/user/${userId}`, { method: "DELETE", headers: bearer(admin) });
    expect(erased.status).toBe(200);
    const left = await openDatabase(env.DB)
      .select()
      .from(phoneVerifications)
      .where(eq(phoneVerifications.userId, userId))
      .all();
    expect(left).toEqual([]);
  });

  it("answers 503 and keeps no code when the text cannot be sent", async () => {
    const userId = await userWithPhone();
    // A deployed environment without an SMS provider: nothing can be texted.
    const request = new Request(`${BASE}/api/2/user/${userId}`, {
      method: "POST",
      headers: { ...bearer(admin), ...FORM },
      body: "phoneNumber=%2B4796666666",
    });
    const production = { ...env, ENVIRONMENT: "production" } as Bindings;
    const res = await worker.fetch(request, production, createExecutionContext());
    expect(res.status).toBe(503);
    expect(res.headers.get("Retry-After")).toBe("5");
    await expectError(await verify(admin, userId, "+4796666666", "123456"), 409, /No phone number change waits/);
  });
});
