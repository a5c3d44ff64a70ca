import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../src/index";
import {
  appClient,
  BASE,
  basicAuth,
  bearer,
  call,
  container,
  postForm,
  serverToken,
  userTokenResponse,
  webClient,
} from "./helpers/http";
import { createClient, createUser, importData, rowFormGrant } from "./helpers/seed";

const TIMING =
  /^d1;dur=[\d.]+;desc="(\d+) queries, (\d+) rows read, (\d+) written(?:, (\d+) without a row count)?", do;dur=([\d.]+);desc="(\d+) calls?", total;dur=([\d.]+)$/;

describe("Server-Timing (development and staging only)", () => {
  it("reports D1 queries and rows read, the Durable Object and the total of an API call", async () => {
    const res = await call("/api/2/users?limit=2", { headers: bearer(await serverToken()) });
    expect(res.status).toBe(200);
    const [, queries, rowsRead, written, uncounted] = TIMING.exec(res.headers.get("Server-Timing") ?? "") ?? [];
    // The page with its users' rows, each carrying the copy of its parts: one statement.
    expect(Number(queries)).toBe(1);
    expect(Number(rowsRead)).toBeGreaterThan(0);
    expect(Number(written)).toBe(0);
    expect(uncounted).toBeUndefined();
  });

  it("reports no D1 or Durable Object work for the status endpoint, and errors too", async () => {
    const status = await call("/api/2/status");
    expect(status.headers.get("Server-Timing")).toMatch(
      /^d1;dur=0\.0;desc="0 queries, 0 rows read, 0 written", do;dur=0\.0;desc="0 calls", /,
    );
    const refused = await call("/api/2/users", { headers: bearer("not-a-token") });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("Server-Timing")).toMatch(TIMING);
  });

  it("counts every Durable Object call a request waits on, not only the admission", async () => {
    const doCalls = (res: Response) => Number(TIMING.exec(res.headers.get("Server-Timing") ?? "")?.[6]);
    const user = await createUser(990_001);
    const signIn = (password: string) =>
      postForm(
        "/oauth/token",
        { grant_type: "password", username: user.email, password, redirect_uri: webClient.redirectUris[0]! },
        basicAuth(webClient.id, webClient.secret),
      );
    // The sign-in throttle: the attempt begun, then settled: a failure, or the right password.
    const wrong = await signIn("not the passphrase");
    expect(wrong.status).toBe(400);
    expect(doCalls(wrong)).toBe(2);
    const right = await signIn(user.password);
    expect(right.status).toBe(200);
    expect(doCalls(right)).toBe(2);
    const { access_token: token } = (await right.json()) as { access_token: string };
    // An exchange code redeemed: reserved at the Durable Object, then, its tokens written, spent.
    const exchanged = await postForm("/api/2/oauth/exchange", { clientId: appClient.id, type: "code" }, bearer(token));
    expect(exchanged.status).toBe(200);
    const { code } = ((await exchanged.json()) as { data: { code: string } }).data;
    const redeemed = await postForm(
      "/oauth/token",
      { grant_type: "authorization_code", code, redirect_uri: appClient.defaultRedirectUri! },
      basicAuth(appClient.id, appClient.secret),
    );
    expect(redeemed.status).toBe(200);
    expect(doCalls(redeemed)).toBe(2);
    // A revocation is listed at the client's Durable Object.
    const revoked = await postForm("/oauth/revoke", { token }, basicAuth(webClient.id, webClient.secret));
    expect(revoked.status).toBe(200);
    expect(doCalls(revoked)).toBe(1);
  });

  it("reports a refresh as one Durable Object call, no D1 statement", async () => {
    const refresh_token = (await userTokenResponse(await createUser(990_002))).refresh_token as string;
    const res = await postForm(
      "/oauth/token",
      { grant_type: "refresh_token", refresh_token },
      basicAuth(webClient.id, webClient.secret),
    );
    expect(res.status).toBe(200);
    const timing = res.headers.get("Server-Timing") ?? "";
    const [, queries, , written] = TIMING.exec(timing) ?? [];
    expect(Number(queries)).toBe(0);
    expect(Number(written)).toBe(0);
    expect(timing).toMatch(/do;dur=[\d.]+;desc="1 call"/);
  });

  it("reports a grant-row refresh as one D1 round trip that writes the grant's row and one index entry", async () => {
    const { refreshToken: refresh_token } = await rowFormGrant(
      webClient.id,
      Number((await createUser(990_003)).row.userId),
    );
    const res = await postForm(
      "/oauth/token",
      { grant_type: "refresh_token", refresh_token },
      basicAuth(webClient.id, webClient.secret),
    );
    expect(res.status).toBe(200);
    const [, queries, , written] = TIMING.exec(res.headers.get("Server-Timing") ?? "") ?? [];
    // One statement: the rotation in place, which returns the row with its user's subject.
    expect(Number(queries)).toBe(1);
    expect(Number(written)).toBe(2);
  });

  it("reads at most 3 D1 rows a user for a page of 100 users, and 3 for a user found by address or by id", async () => {
    const client = await createClient();
    const first = 5_000_000 + Math.floor(Math.random() * 1000) * 200;
    await importData({
      users: Array.from({ length: 120 }, (_, i) => ({
        userId: String(first + i),
        uuid: crypto.randomUUID(),
        status: i % 10 === 0 ? 0 : 1,
        email: `rows${first + i}@example.org`,
        emails: [{ value: `work${first + i}@example.org`, type: "work" }],
        phoneNumber: "+4791234567",
        addresses: { home: { streetAddress: "Storgata 1", postalCode: "0155", locality: "Oslo", country: "NO" } },
        published: "2024-01-01 00:00:00",
        updated: "2024-01-01 00:00:00",
        clients: [client.id],
      })),
    });
    const token = await serverToken(client);
    const bookmark = (await call("/api/2/users?limit=1", { headers: bearer(token) })).headers.get("x-d1-bookmark")!;
    // Read from D1 (a bookmark), never from the isolate's cache.
    const rows = async (path: string, shown: number, statements = 1) => {
      const res = await call(path, { headers: { ...bearer(token), "x-d1-bookmark": bookmark } });
      expect(res.status).toBe(200);
      const { data } = await container(res);
      expect(Array.isArray(data) ? data.length : 1).toBe(shown);
      const [, queries, rowsRead] = TIMING.exec(res.headers.get("Server-Timing") ?? "") ?? [];
      expect(Number(queries)).toBe(statements);
      return Number(rowsRead);
    };
    expect(await rows("/api/2/users?limit=100", 100)).toBeLessThanOrEqual(300);
    // Read again while the isolate holds the page: its users' versions alone, packed into one row
    // (the next read shows it: a change costs a second statement).
    expect(await rows("/api/2/users?limit=100", 100)).toBeLessThanOrEqual(300);
    // One user changed since: the page, then that user by its key.
    await env.DB.prepare("UPDATE users SET display_name = 'Changed' WHERE id = ?")
      .bind(first + 1)
      .run();
    expect(await rows("/api/2/users?limit=100", 100, 2)).toBeLessThanOrEqual(303);
    expect(await rows("/api/2/users?limit=100&offset=10", 100)).toBeLessThanOrEqual(300 + 2 * 10);
    expect(await rows("/api/2/users?limit=100&offset=10", 100)).toBeLessThanOrEqual(300 + 2 * 10);
    expect(await rows(`/api/2/users?email=rows${first + 7}@example.org`, 1)).toBeLessThanOrEqual(3);
    expect(await rows(`/api/2/user/${first + 7}`, 1)).toBeLessThanOrEqual(3);
  });

  it.each([
    ["staging", true],
    ["production", false],
    ["", false],
    ["Production", false],
  ])("is sent in %o: %s", async (environment, sent) => {
    const request = new Request(`${BASE}/api/2/status`);
    const res = await worker.fetch(request, { ...env, ENVIRONMENT: environment }, createExecutionContext());
    expect(res.status).toBe(200);
    expect(res.headers.has("Server-Timing")).toBe(sent);
  });
});
