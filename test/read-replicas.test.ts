import { afterEach, describe, expect, it, vi } from "vitest";
import { API_READ_CACHE_TTL_MS } from "../src/db/cached-reads";
import { sessionStart } from "../src/middleware/request";
import { BASE, basicAuth, bearer, call, container, postForm, serverToken, userToken } from "./helpers/http";
import { createClient, createUser, importData } from "./helpers/seed";

const BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/;
const device = { deviceId: "BOOKMARK-1", platform: "Android", applicationName: "Nordic Daily" };

describe("D1 sessions: x-d1-bookmark", () => {
  it("returns the session's bookmark after a write, and reads from at least there when it is sent back", async () => {
    const token = await userToken(await createUser(9701));
    const written = await postForm("/api/2/devices", device, bearer(token));
    expect(written.status).toBe(201);
    const afterWrite = written.headers.get("x-d1-bookmark");
    expect(afterWrite).toMatch(BOOKMARK);

    const read = await call("/api/2/me", { headers: { ...bearer(token), "x-d1-bookmark": afterWrite! } });
    expect(read.status).toBe(200);
    const afterRead = read.headers.get("x-d1-bookmark");
    expect(afterRead).toMatch(BOOKMARK);
    // Bookmarks are fixed-width hex: a later point in the database's history sorts after an earlier one.
    expect(afterRead! >= afterWrite!).toBe(true);
  });

  it("gives a bookmark to a read without one, and none to a response that touched no database", async () => {
    const read = await call("/api/2/clients", { headers: bearer(await serverToken()) });
    expect(read.headers.get("x-d1-bookmark")).toMatch(BOOKMARK);
    const status = await call("/api/2/status");
    expect(status.headers.has("x-d1-bookmark")).toBe(false);
  });

  it.each([
    ["not a bookmark", "first-primary"],
    ["too long", `${"0".repeat(8)}-${"0".repeat(8)}-${"0".repeat(8)}-${"0".repeat(33)}`],
    ["upper case", `${"A".repeat(8)}-${"0".repeat(8)}-${"0".repeat(8)}-${"0".repeat(32)}`],
    ["empty", ""],
  ])("refuses a malformed bookmark (%s) with 400 before reading anything", async (_, value) => {
    const res = await call("/api/2/clients", { headers: { ...bearer(await serverToken()), "x-d1-bookmark": value } });
    expect(res.status).toBe(400);
    expect((await container(res)).error).toMatchObject({
      error: "invalid_request",
      error_description: "Malformed x-d1-bookmark header: send back one this service returned",
    });
    expect(res.headers.has("x-d1-bookmark")).toBe(false);
  });

  it("starts API reads at a replica (the caller's bookmark, else the nearest) and everything else at the primary", () => {
    const bookmark = "00000000-0000000d-00000000-00000000000000000000000000000000";
    const at = (method: string, path: string, sent?: string) =>
      sessionStart(new Request(`${BASE}${path}`, { method }), sent);
    expect(at("GET", "/api/2/users")).toBe("first-unconstrained");
    expect(at("HEAD", "/api/2/me.json", bookmark)).toBe(bookmark);
    expect(at("GET", "/api/2/users?x-d1-bookmark=1", bookmark)).toBe(bookmark);
    // A bookmark only promises "at least this fresh": never for writes or for what decides security.
    expect(at("POST", "/api/2/devices", bookmark)).toBe("first-primary");
    expect(at("POST", "/oauth/token", bookmark)).toBe("first-primary");
    expect(at("GET", "/oauth/authorize", bookmark)).toBe("first-primary");
    expect(at("GET", "/.well-known/jwks.json", bookmark)).toBe("first-primary");
    expect(at("GET", "/apiary/2/users", bookmark)).toBe("first-primary");
  });

  it("sends no bookmark with a failure", async () => {
    const refused = await postForm(
      "/oauth/token",
      { grant_type: "client_credentials" },
      basicAuth("0".repeat(24), "nope"),
    );
    expect(refused.status).toBe(401);
    expect(refused.headers.has("x-d1-bookmark")).toBe(false);
  });

  it("refuses a malformed bookmark at the token endpoint too, in the OAuth error body", async () => {
    const res = await postForm("/oauth/token", { grant_type: "client_credentials" }, { "x-d1-bookmark": "x" });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: "invalid_request" });
  });
});

describe("the isolate's read cache (clients, user searches and profiles, me)", () => {
  afterEach(() => vi.useRealTimers());

  it("shows a change at once to a caller that sends its bookmark, and to every caller within the cache time", async () => {
    const token = await serverToken(await createClient({ merchantId: 20 }));
    const listed = async (headers: Record<string, string> = {}) => {
      const res = await call("/api/2/clients", { headers: { ...bearer(token), ...headers } });
      expect(res.status).toBe(200);
      return { ids: Object.keys((await container(res)).data as object), bookmark: res.headers.get("x-d1-bookmark") };
    };
    const before = await listed();
    const added = await createClient({ merchantId: 20 });
    expect(before.ids).not.toContain(added.id);

    expect((await listed({ "x-d1-bookmark": before.bookmark! })).ids).toContain(added.id);
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + API_READ_CACHE_TTL_MS });
    expect((await listed()).ids).toContain(added.id);
  });

  it("keeps a user search's page and its users' profiles for the cache time, skipped by a bookmark", async () => {
    const client = await createClient();
    const token = await serverToken(client);
    const first = 9_720_000 + Math.floor(Math.random() * 10_000) * 10;
    const user = (n: number, familyName: string) => ({
      userId: String(first + n),
      uuid: crypto.randomUUID(),
      status: 1,
      email: `cached${first + n}@example.org`,
      published: "2024-01-01 00:00:00",
      updated: "2024-01-01 00:00:00",
      name: { familyName },
      clients: [client.id],
    });
    const page = async (headers: Record<string, string> = {}) => {
      const res = await call("/api/2/users?sort=userId", { headers: { ...bearer(token), ...headers } });
      expect(res.status).toBe(200);
      const users = (await container(res)).data as { userId: string; name: { familyName: string } }[];
      return {
        users: users.map((u) => `${Number(u.userId) - first} ${u.name.familyName}`),
        bookmark: res.headers.get("x-d1-bookmark"),
      };
    };
    await importData({ users: [user(1, "Before")] });
    const before = await page();
    expect(before.users).toEqual(["1 Before"]);

    await importData({ users: [user(1, "After"), user(2, "Added")] });
    // Within the cache time a caller without a bookmark may get the page from before, like a replica behind.
    expect((await page()).users).toEqual(["1 Before"]);
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + API_READ_CACHE_TTL_MS });
    expect((await page()).users).toEqual(["1 After", "2 Added"]);

    await importData({ users: [user(2, "Renamed")] });
    expect((await page()).users).toEqual(["1 After", "2 Added"]);
    expect((await page({ "x-d1-bookmark": before.bookmark! })).users).toEqual(["1 After", "2 Renamed"]);
  });
});
