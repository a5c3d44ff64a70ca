import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { API_READ_CACHE_TTL_MS } from "../src/db/cached-reads";
import { openDatabase } from "../src/db/client";
import { isConnected } from "../src/db/queries/users";
import { basicAuth, bearer, call, container, erik, ingrid, postForm, userToken } from "./helpers/http";
import { createClient, createUser, importData } from "./helpers/seed";

const USER_FIELDS = [
  "id",
  "userId",
  "uuid",
  "name",
  "displayName",
  "published",
  "updated",
  "status",
  "email",
  "emailVerified",
  "emails",
  "phoneNumber",
  "phoneNumberVerified",
  "phoneNumbers",
  "verified",
  "url",
  "photo",
  "preferredUsername",
  "gender",
  "birthday",
  "locale",
  "utcOffset",
  "lastLoggedIn",
  "lastAuthenticated",
  "imported",
  "migrated",
  "addresses",
  "accounts",
  "merchants",
  "currentLocation",
  "tracking",
];

describe("GET /api/2/me", () => {
  it("returns the token's own user with every field of the User object", async () => {
    const res = await call("/api/2/me", { headers: bearer(await userToken(ingrid)) });
    expect(res.status).toBe(200);
    const body = await container(res);
    expect(body).toMatchObject({ object: "User", type: "element", code: 200, error: null });
    expect(Object.keys(body.data)).toEqual(USER_FIELDS);
    expect(body.data).toMatchObject({
      id: "4e1b3c5d7f9a",
      userId: "1001",
      uuid: ingrid.uuid,
      name: { givenName: "Ingrid", familyName: "Hansen", formatted: "Ingrid Hansen" },
      displayName: "Ingrid H.",
      published: "2019-11-05 12:00:00",
      updated: "2024-03-02 10:00:00",
      status: 1,
      email: "ingrid.hansen@example.org",
      emailVerified: "2024-03-01 09:15:00",
      phoneNumber: "+4791234567",
      phoneNumberVerified: "2024-03-02 10:00:00",
      gender: "female",
      birthday: "1988-07-14",
      locale: "nb_NO",
      utcOffset: "+01:00",
      addresses: {
        home: { type: "home", streetAddress: "Storgata 1", postalCode: "0155", locality: "Oslo", country: "NO" },
      },
      accounts: [],
      merchants: [10],
      currentLocation: [],
      tracking: false,
    });
    expect(body.data.emails).toEqual([
      { value: "ingrid.hansen@example.org", type: "other", primary: true, verified: true },
      { value: "ingrid@work.example", type: "work", primary: false, verified: true },
    ]);
    expect(body.data.phoneNumbers).toEqual([{ value: "+4791234567", type: "mobile", primary: true, verified: true }]);
    expect(body.data.lastAuthenticated).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    expect(JSON.stringify(body.data)).not.toContain("pbkdf2");
  });

  it("fills the spec's defaults for a sparse user", async () => {
    const body = await container(await call("/api/2/me", { headers: bearer(await userToken(erik)) }));
    expect(body.data).toMatchObject({
      id: null,
      userId: "1002",
      status: 0,
      gender: "male",
      birthday: "0000-00-00",
      verified: false,
      emailVerified: false,
      phoneNumber: null,
      phoneNumbers: [],
      addresses: [],
      currentLocation: [],
      accounts: [],
      tracking: false,
      url: null,
      photo: null,
    });
  });
});

describe("GET /api/2/me for a user blocked or deleted after sign-in", () => {
  afterEach(() => vi.useRealTimers());

  it.each([
    [-2, "blocked", "reading D1, for a caller that sends its bookmark"],
    [-3, "deleted", "reading D1, for a caller that sends its bookmark"],
    [-2, "blocked", "within the isolate's read cache time, for any caller"],
  ])("refuses the user's token once the status is %i (%s): %s", async (status, word, when) => {
    const user = await createUser(9200 - status + (when.startsWith("within") ? 10 : 0));
    const token = await userToken(user);
    const before = await call("/api/2/me", { headers: bearer(token) });
    expect(before.status).toBe(200);
    await importData({ users: [{ ...user.row, status }] });
    const headers: Record<string, string> = bearer(token);
    if (when.startsWith("within")) vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + API_READ_CACHE_TTL_MS });
    else headers["x-d1-bookmark"] = before.headers.get("x-d1-bookmark")!;
    const res = await call("/api/2/me", { headers });
    expect(res.status).toBe(401);
    expect(res.headers.get("WWW-Authenticate")).toContain('error="invalid_token"');
    const body = await container(res);
    expect(body.error).toMatchObject({ error: "invalid_token", error_code: 401 });
    expect(body.error!.error_description).toContain(word);
    expect(body.data).toBeNull();
  });
});

describe("password grant and connections", () => {
  it("refuses a user who never granted a client without auto-approval access", async () => {
    const client = await createClient({ autoApprove: false });
    const res = await postForm(
      "/oauth/token",
      {
        grant_type: "password",
        username: erik.email,
        password: erik.password,
        redirect_uri: "https://test.example/callback",
      },
      basicAuth(client.id, client.secret),
    );
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: "invalid_grant" });
  });

  it("connects the user to an auto-approving client on sign-in", async () => {
    const client = await createClient({ autoApprove: true });
    const db = openDatabase(env.DB);
    expect(await isConnected(db, client.id, 1002)).toBe(false);
    const token = await userToken(erik, { ...client, redirectUris: ["https://test.example/callback"] });
    expect(await isConnected(db, client.id, 1002)).toBe(true);
    const body = await container(await call("/api/2/me", { headers: bearer(token) }));
    expect(body.data.lastLoggedIn).not.toBe(false);
  });
});
