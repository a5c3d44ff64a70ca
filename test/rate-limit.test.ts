import {
  createExecutionContext,
  runDurableObjectAlarm,
  runInDurableObject,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { decodeJwt } from "jose";
import { afterEach, describe, expect, it, vi } from "vitest";
import { openDatabase } from "../src/db/client";
import { clients } from "../src/db/schema";
import { POLICY_TTL_MS } from "../src/durable-objects/client-policy";
import { RateLimiter, rateLimiterFor } from "../src/durable-objects/rate-limiter";
import { LEASE_MS } from "../src/durable-objects/lease-lifetime";
import worker from "../src/index";
import {
  BASE,
  basicAuth,
  bearer,
  call,
  container,
  erik,
  ingrid,
  postForm,
  serverToken,
  userToken,
} from "./helpers/http";
import { createClient, importData } from "./helpers/seed";

describe("rate limits", () => {
  it("reports limit, remaining and reset in the container and the headers", async () => {
    const token = await serverToken(await createClient({ rateLimit: { limit: 10, windowSeconds: 60 } }));
    const first = await call("/api/2/clients", { headers: bearer(token) });
    const second = await call("/api/2/clients", { headers: bearer(token) });
    const a = await container(first);
    const b = await container(second);
    expect(a.request).toMatchObject({ limit: 10, remaining: 9 });
    expect(b.request).toMatchObject({ limit: 10, remaining: 8 });
    expect(a.request.reset).toBeGreaterThan(0);
    expect(a.request.reset).toBeLessThanOrEqual(60);
    expect(second.headers.get("X-RateLimit-Limit")).toBe("10");
    expect(second.headers.get("X-RateLimit-Remaining")).toBe("8");
    expect(second.headers.get("X-RateLimit-Reset")).toBe(String(b.request.reset));
  });

  it("answers 420 once the quota is spent, with the error body and Retry-After", async () => {
    const token = await serverToken(await createClient({ rateLimit: { limit: 2, windowSeconds: 60 } }));
    for (let i = 0; i < 2; i++) expect((await call("/api/2/clients", { headers: bearer(token) })).status).toBe(200);
    const res = await call("/api/2/clients", { headers: bearer(token) });
    expect(res.status).toBe(420);
    expect(Number(res.headers.get("Retry-After"))).toBeGreaterThan(0);
    expect(res.headers.get("X-RateLimit-Limit")).toBe("2");
    expect(res.headers.get("X-RateLimit-Remaining")).toBe("0");
    expect(res.headers.get("X-RateLimit-Reset")).toBe(res.headers.get("Retry-After"));
    const body = await container(res);
    expect(body.code).toBe(420);
    expect(body.error).toMatchObject({ error_code: 420, error_description: "Rate limit exceeded" });
    expect(body.request).toMatchObject({ limit: 2, remaining: 0 });
    expect(body.data).toBeNull();
  });

  it("gives the whole quota back once the window has passed", async () => {
    // Two seconds leave ample room for the first two calls to land in one window on a busy machine.
    const token = await serverToken(await createClient({ rateLimit: { limit: 1, windowSeconds: 2 } }));
    expect((await call("/api/2/clients", { headers: bearer(token) })).status).toBe(200);
    expect((await call("/api/2/clients", { headers: bearer(token) })).status).toBe(420);
    await new Promise((resolve) => setTimeout(resolve, 2100));
    const res = await call("/api/2/clients", { headers: bearer(token) });
    expect(res.status).toBe(200);
    expect((await container(res)).request).toMatchObject({ limit: 1, remaining: 0 });
  });

  it("counts user and server tokens of one client together, and each client apart", async () => {
    const limited = await createClient({ rateLimit: { limit: 1, windowSeconds: 60 }, autoApprove: true });
    const other = await createClient({ rateLimit: { limit: 1, windowSeconds: 60 } });
    const user = await userToken(ingrid, { ...limited, redirectUris: ["https://test.example/callback"] });
    expect((await call("/api/2/me", { headers: bearer(user) })).status).toBe(200);
    expect((await call("/api/2/clients", { headers: bearer(await serverToken(limited)) })).status).toBe(420);
    expect((await call("/api/2/clients", { headers: bearer(await serverToken(other)) })).status).toBe(200);
  });

  it("stops an over-limit request before any other check", async () => {
    const client = await createClient({ rateLimit: { limit: 1, windowSeconds: 60 } });
    const token = await serverToken(client);
    await call("/api/2/clients", { headers: bearer(token) });
    const wrongType = await call("/api/2/me", { headers: bearer(token) });
    expect(wrongType.status).toBe(420);
  });

  it("uses the documented default quota for clients without one", async () => {
    const token = await serverToken(await createClient());
    const body = await container(await call("/api/2/clients", { headers: bearer(token) }));
    expect(body.request).toMatchObject({ limit: 1000, remaining: 999 });
    expect(body.request.reset).toBeLessThanOrEqual(3600);
  });

  it("does not count unauthenticated endpoints", async () => {
    const token = await serverToken(await createClient({ rateLimit: { limit: 5, windowSeconds: 60 } }));
    await call(`/api/2/status?oauth_token=${token}`);
    const body = await container(await call("/api/2/clients", { headers: bearer(token) }));
    expect(body.request.remaining).toBe(4);
  });
});

describe("IP allow-list", () => {
  it("refuses callers outside a non-empty allow-list with 403, without spending the quota", async () => {
    const client = await createClient({
      ipWhitelist: ["192.0.2.10", "2001:0db8:0:0:0:0:0:1"],
      rateLimit: { limit: 5, windowSeconds: 60 },
    });
    const tokenFromInside = await serverToken(client, {}, { "CF-Connecting-IP": "192.0.2.10" });
    const outside = await call("/api/2/clients", {
      headers: { ...bearer(tokenFromInside), "CF-Connecting-IP": "198.51.100.7" },
    });
    expect(outside.status).toBe(403);
    const refused = await container(outside);
    expect(refused.error).toMatchObject({
      error: "access_denied",
      error_description: "Requesting IP is not whitelisted",
    });
    const noIp = await call("/api/2/clients", { headers: bearer(tokenFromInside) });
    expect(noIp.status).toBe(403);
    const inside = await call("/api/2/clients", {
      headers: { ...bearer(tokenFromInside), "CF-Connecting-IP": "2001:DB8::1" },
    });
    expect(inside.status).toBe(200);
    expect((await container(inside)).request.remaining).toBe(4);
  });
});

describe("a token whose client is gone", () => {
  it("gets 404 Unknown client ID", async () => {
    const client = await createClient();
    const token = await serverToken(client);
    await openDatabase(env.DB).delete(clients).where(eq(clients.id, client.id));
    const res = await call("/api/2/clients", { headers: bearer(token) });
    expect(res.status).toBe(404);
    expect((await container(res)).error).toMatchObject({
      error: "invalid_client_id",
      error_description: "Unknown client ID",
    });
  });
});

describe("a token whose client moved to another merchant", () => {
  it("sees the client's new merchant, never the one the token was issued under", async () => {
    const client = await createClient();
    const token = await serverToken(client);
    await importData({ clients: [{ id: client.id, secret: client.secret, name: "Moved", merchantId: 20 }] });
    const res = await call("/api/2/clients", { headers: bearer(token) });
    expect(res.status).toBe(200);
    const listed = (await container(res)).data as Record<string, { merchantId: number }>;
    expect(Object.keys(listed)).toContain(client.id);
    expect(Object.values(listed).every((c) => c.merchantId === 20)).toBe(true);
  });
});

describe("the rate limiter's storage", () => {
  it("drops expired counters on its alarm and wakes again for the live ones", async () => {
    const client = await createClient({ rateLimit: { limit: 5, windowSeconds: 1 }, autoApprove: true });
    await call("/api/2/clients", { headers: bearer(await serverToken(client)) });
    const failed = await postForm(
      "/oauth/token",
      {
        grant_type: "password",
        username: erik.email,
        password: "wrong",
        redirect_uri: "https://test.example/callback",
      },
      basicAuth(client.id, client.secret),
    );
    expect(failed.status).toBe(400);
    await new Promise((resolve) => setTimeout(resolve, 1100));

    const limiter = rateLimiterFor(env, client.id);
    expect(await runDurableObjectAlarm(limiter)).toBe(true);
    const stored = await runInDurableObject(limiter, (_, state) => ({
      kv: [...state.storage.kv.list()].map(([key]) => key),
      failures: state.storage.sql
        .exec("SELECT account, network, count FROM password_failures ORDER BY account, network")
        .toArray(),
    }));
    expect(stored.kv).toEqual([]);
    // The account from its network, the account from every network, the network for every account.
    expect(stored.failures).toEqual([
      { account: "*", network: "unknown", count: 1 },
      { account: "user:1002", network: "*", count: 1 },
      { account: "user:1002", network: "unknown", count: 1 },
    ]);
    const alarm = await runInDurableObject(limiter, (_, state) => state.storage.getAlarm());
    expect(alarm).toBeGreaterThan(Date.now() + 14 * 60_000);
  });

  it("keeps the network of a sign-in known for 30 days, then drops it on its alarm", async () => {
    const client = await createClient({ autoApprove: true });
    const signedIn = await postForm(
      "/oauth/token",
      {
        grant_type: "password",
        username: erik.email,
        password: erik.password,
        redirect_uri: "https://test.example/callback",
      },
      { ...basicAuth(client.id, client.secret), "CF-Connecting-IP": "192.0.2.70" },
    );
    expect(signedIn.status).toBe(200);
    const limiter = rateLimiterFor(env, client.id);
    const known = () =>
      runInDurableObject(limiter, (_, state) =>
        state.storage.sql.exec("SELECT account, network FROM known_networks").toArray(),
      );
    expect(await known()).toEqual([{ account: "user:1002", network: "192.0.2.70" }]);
    try {
      vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 30 * 24 * 3_600_000 + 1 });
      expect(await runDurableObjectAlarm(limiter)).toBe(true);
      expect(await known()).toEqual([]);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("password attempts of a Worker from before networks were counted (a rolling deploy)", () => {
  it("are counted per account as they were: held after 5, taken back by a right password", async () => {
    const limiter = rateLimiterFor(env, (await createClient()).id);
    for (let i = 0; i < 5; i++) expect(await limiter.beginSignIn("user:1002")).toEqual({ allowed: true });
    expect(await limiter.beginSignIn("user:1002")).toMatchObject({ allowed: false });
    await limiter.signInSucceeded("user:1002");
    expect(await limiter.beginSignIn("user:1002")).toEqual({ allowed: true });
  });
});

describe("the rate limiter's storage from before leases", () => {
  it("moves revocations kept without a sequence number into the table leases read", async () => {
    const client = await createClient();
    const limiter = rateLimiterFor(env, client.id);
    const moved = await runInDurableObject(limiter, (_, state) => {
      state.storage.sql.exec("CREATE TABLE revocations (id TEXT PRIMARY KEY, expires_at INTEGER NOT NULL)");
      state.storage.sql.exec("INSERT INTO revocations VALUES ('jti:old-token', ?)", Date.now() + 60_000);
      new RateLimiter(state, env);
      return {
        revoked: state.storage.sql.exec("SELECT id FROM revoked").toArray(),
        old: state.storage.sql.exec("SELECT name FROM sqlite_master WHERE name = 'revocations'").toArray(),
      };
    });
    expect(moved).toEqual({ revoked: [{ id: "jti:old-token" }], old: [] });
    expect(await limiter.revoked({ jti: "old-token", grant: null })).toBe(true);
  });
});

describe("leases: the client's Durable Object is asked only now and then", () => {
  const durableObjectCalls = (res: Response) =>
    Number(/do;dur=[\d.]+;desc="(\d+) calls?"/.exec(res.headers.get("Server-Timing") ?? "")?.[1]);
  const windowOf = (clientId: string) =>
    runInDurableObject(rateLimiterFor(env, clientId), (_, state) =>
      state.storage.kv.get<{ count: number; leases: Record<string, number> }>("window"),
    );

  afterEach(() => vi.useRealTimers());

  it("admits most calls of a client with a large quota without reaching its Durable Object, counting each exactly", async () => {
    const token = await serverToken(await createClient());
    let reached = 0;
    for (let call_ = 1; call_ <= 60; call_++) {
      const res = await call("/api/2/clients", { headers: bearer(token) });
      expect(res.status).toBe(200);
      expect(res.headers.get("X-RateLimit-Remaining")).toBe(String(1000 - call_));
      reached += durableObjectCalls(res);
    }
    // The first call (a lease of one: an isolate's first call of a client asks for itself alone), the
    // second (its first lease), and at most a few that found a lease used up before its top-up came back.
    expect(reached).toBeGreaterThanOrEqual(2);
    expect(reached).toBeLessThanOrEqual(5);
  });

  it("asks on every call of a client with a quota of 3 and refuses the fourth exactly as before", async () => {
    const token = await serverToken(await createClient({ rateLimit: { limit: 3, windowSeconds: 60 } }));
    for (const remaining of [2, 1, 0]) {
      const res = await call("/api/2/clients", { headers: bearer(token) });
      expect(res.status).toBe(200);
      expect(res.headers.get("X-RateLimit-Remaining")).toBe(String(remaining));
      expect(durableObjectCalls(res)).toBe(1);
    }
    const fourth = await call("/api/2/clients", { headers: bearer(token) });
    expect(fourth.status).toBe(420);
    expect(durableObjectCalls(fourth)).toBe(1);
  });

  it("never admits more than the quota when calls race for it", async () => {
    const token = await serverToken(await createClient({ rateLimit: { limit: 40, windowSeconds: 60 } }));
    const statuses = await Promise.all(
      Array.from({ length: 60 }, () => call("/api/2/clients", { headers: bearer(token) }).then((res) => res.status)),
    );
    expect(statuses.filter((status) => status === 200)).toHaveLength(40);
    expect(statuses.filter((status) => status === 420)).toHaveLength(20);
  });

  it("hands unused slots back, so that the Durable Object counts exactly the calls admitted", async () => {
    const client = await createClient();
    const token = await serverToken(client);
    for (let i = 0; i < 5; i++) expect((await call("/api/2/clients", { headers: bearer(token) })).status).toBe(200);
    const leased = await windowOf(client.id);
    expect(Object.keys(leased!.leases)).toHaveLength(1);
    expect(leased!.count).toBeGreaterThanOrEqual(5);

    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + LEASE_MS });
    const sixth = await call("/api/2/clients", { headers: bearer(token) });
    expect(sixth.headers.get("X-RateLimit-Remaining")).toBe("994");
    const { count, leases } = (await windowOf(client.id))!;
    const [slots] = Object.values(leases);
    // Six admitted, the sixth with a new lease whose other slots are still out.
    expect(count - (slots! - 1)).toBe(6);
  });

  it("refuses a token revoked at the Durable Object (by another isolate) within a lease", async () => {
    const client = await createClient();
    const token = await serverToken(client);
    // The first call is a lease of one; the second takes a lease.
    for (let i = 0; i < 2; i++) expect((await call("/api/2/clients", { headers: bearer(token) })).status).toBe(200);
    const { jti } = decodeJwt(token) as { jti: string };
    await rateLimiterFor(env, client.id).revoke([{ jti, expiresAt: Date.now() + 3_600_000 }]);

    const withinLease = await call("/api/2/clients", { headers: bearer(token) });
    expect(withinLease.status).toBe(200);
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + LEASE_MS });
    const afterLease = await call("/api/2/clients", { headers: bearer(token) });
    expect(afterLease.status).toBe(401);
    expect((await container(afterLease)).error).toMatchObject({ error: "invalid_token" });
  });

  it("applies a policy change (the allow-list) within a lease and the policy's age", async () => {
    const client = await createClient();
    const token = await serverToken(client);
    expect((await call("/api/2/clients", { headers: bearer(token) })).status).toBe(200);
    await openDatabase(env.DB)
      .update(clients)
      .set({ ipAllowList: ["192.0.2.10"] })
      .where(eq(clients.id, client.id));

    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + LEASE_MS + POLICY_TTL_MS });
    const res = await call("/api/2/clients", { headers: bearer(token) });
    expect(res.status).toBe(403);
    expect((await container(res)).error).toMatchObject({ error_description: "Requesting IP is not whitelisted" });
  });
});

describe("leases: what a top-up brings", () => {
  afterEach(() => vi.useRealTimers());

  /** A call through the Worker, then its background work (a lease's top-up) to its end. */
  async function callAndSettle(token: string, at: number): Promise<Response> {
    vi.useFakeTimers({ toFake: ["Date"], now: at });
    const ctx = createExecutionContext();
    const res = await worker.fetch(new Request(`${BASE}/api/2/clients`, { headers: bearer(token) }), env, ctx);
    await waitOnExecutionContext(ctx);
    return res;
  }

  it("a revocation made elsewhere reaches a held lease with its next top-up, before the lease ends", async () => {
    const client = await createClient();
    const token = await serverToken(client);
    const start = Date.now();
    // The first call is a lease of one; the second takes a lease valid LEASE_MS from `start`.
    for (let i = 0; i < 2; i++) expect((await callAndSettle(token, start)).status).toBe(200);
    const { jti } = decodeJwt(token) as { jti: string };
    await rateLimiterFor(env, client.id).revoke([{ jti, expiresAt: start + 3_600_000 }]);

    // Past half the lease: admitted from the lease, which is topped up (revocations included).
    expect((await callAndSettle(token, start + LEASE_MS / 2 + 1)).status).toBe(200);
    const refused = await callAndSettle(token, start + LEASE_MS / 2 + 2);
    expect(refused.status).toBe(401);
    expect(refused.headers.get("Server-Timing")).toContain('desc="0 calls"');
  });

  it("a policy change reaches a held lease with a top-up once the Durable Object's copy is older than POLICY_TTL_MS", async () => {
    const client = await createClient();
    const token = await serverToken(client);
    const start = Date.now();
    for (let i = 0; i < 2; i++) expect((await callAndSettle(token, start)).status).toBe(200);
    await openDatabase(env.DB)
      .update(clients)
      .set({ ipAllowList: ["192.0.2.10"] })
      .where(eq(clients.id, client.id));

    // A top-up at half the lease renews it with the policy the Durable Object still holds.
    expect((await callAndSettle(token, start + LEASE_MS / 2 + 1)).status).toBe(200);
    // Past the policy's age, at half the renewed lease: this top-up reads the new policy.
    const renewedAt = start + LEASE_MS / 2 + 1;
    expect((await callAndSettle(token, renewedAt + LEASE_MS / 2 + 1)).status).toBe(200);
    const refused = await callAndSettle(token, renewedAt + LEASE_MS / 2 + 2);
    expect(refused.status).toBe(403);
    expect(refused.headers.get("Server-Timing")).toContain('desc="0 calls"');
  });
});

describe("leases: limits and older callers", () => {
  const durableObjectCalls = (res: Response) =>
    Number(/do;dur=[\d.]+;desc="(\d+) calls?"/.exec(res.headers.get("Server-Timing") ?? "")?.[1]);

  it("gives a client with more live revocations than a lease carries leases of one: every call asks", async () => {
    const client = await createClient();
    const token = await serverToken(client);
    const expiresAt = Date.now() + 3_600_000;
    await rateLimiterFor(env, client.id).revoke(
      Array.from({ length: 2_001 }, (_, i) => ({ jti: `other-${i}`, expiresAt })),
    );
    for (let i = 0; i < 4; i++) {
      const res = await call("/api/2/clients", { headers: bearer(token) });
      expect(res.status).toBe(200);
      expect(durableObjectCalls(res)).toBe(1);
    }
  });

  it("admits a caller from before leases (a rolling deploy) with its figures and merchant, and no lease", async () => {
    const client = await createClient({ rateLimit: { limit: 50, windowSeconds: 60 } });
    const admission = await rateLimiterFor(env, client.id).admit(client.id, null, "clients", {
      jti: null,
      grant: null,
    });
    expect(admission).toMatchObject({
      outcome: "admitted",
      figures: { limit: 50, remaining: 49 },
      merchantId: 10,
      lease: { id: null, slots: 1 },
    });
  });
});
