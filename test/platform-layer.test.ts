/**
 * The layer over the bindings (src/platform): what a fault of D1, KV or the RateLimiter becomes at
 * the Worker's surface. Each flow's own faults are tested beside it (test/faults/*).
 */
import { describe, expect, it, vi } from "vitest";
import { CALL_DEADLINE_MS } from "../src/platform/calls";
import { faultyEnv, fetchWith, platformErrors } from "./helpers/faults";
import type { Bindings } from "../src/env";
import { basicAuth, bearer, call, container, serverToken, userToken, webClient } from "./helpers/http";
import { createClient } from "./helpers/seed";

/** A response answered within the deadline, with a little room for the Worker's own work. */
const WITHIN_DEADLINE_MS = CALL_DEADLINE_MS + 1_000;

async function expectUnavailable(res: Response & { elapsedMs: number }) {
  expect(res.status).toBe(503);
  expect(Number(res.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
  expect(res.elapsedMs).toBeLessThan(WITHIN_DEADLINE_MS);
}

function quietly() {
  return vi.spyOn(console, "error").mockImplementation(() => {});
}

describe("GET /api/2/status", () => {
  it("reports the platform degraded while the isolate has lately seen a binding fail, naming it", async () => {
    const log = quietly();
    // The first test of this file: nothing has failed KV in this isolate before it.
    const before = (await container(await call("/api/2/status"))).data;
    expect(before.problems ?? []).not.toContain("KV failed a call in the last minute");
    const token = await userToken();
    const { env } = faultyEnv({ CODES: { kind: "outage" } });
    const exchanged = await fetchWith(env, "/api/2/oauth/exchange", {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", ...bearer(token) },
      body: new URLSearchParams({ clientId: webClient.id, type: "code" }),
    });
    expect(exchanged.status).toBe(503);
    const res = await call("/api/2/status");
    expect(res.status).toBe(200);
    const { data } = await container(res);
    expect(data.platform).toBe("degraded");
    expect(data.problems).toContain("KV failed a call in the last minute");
    log.mockRestore();
  });
});

describe("a D1 fault", () => {
  it("that one retry gets past answers a read as if nothing had happened", async () => {
    const token = await serverToken();
    const { env, counts } = faultyEnv({ DB: { kind: "once" } });
    // Each test asks for another page: an isolate keeps a page it read for a few seconds.
    const res = await fetchWith(env, "/api/2/users?limit=3", { headers: bearer(token) });
    expect(res.status).toBe(200);
    expect((await container(res)).data.length).toBeGreaterThan(0);
    expect(counts.DB.failed).toBe(1);
    expect(counts.DB.calls).toBeGreaterThan(1);
  });

  it("that lasts answers 503 in the container with Retry-After, logged once", async () => {
    const token = await serverToken();
    const log = quietly();
    const { env, counts } = faultyEnv({ DB: { kind: "outage", error: platformErrors.d1Reset } });
    const res = await fetchWith(env, "/api/2/users?limit=4", { headers: bearer(token) });
    await expectUnavailable(res);
    const body = await container(res);
    expect(body).toMatchObject({
      code: 503,
      error: { error: "temporarily_unavailable", error_code: 503, type: "ApiException" },
      data: null,
    });
    // A read is tried three times, then given up.
    expect(counts.DB.calls).toBe(3);
    expect(log).toHaveBeenCalledOnce();
    expect(String(log.mock.calls[0]![0])).toMatch(/^platform fault: D1 read transient after 3 attempts/);
    log.mockRestore();
  });

  it("that stalls is given up at the deadline", async () => {
    const token = await serverToken();
    const log = quietly();
    const { env } = faultyEnv({ DB: { kind: "stall" } });
    const res = await fetchWith(env, "/api/2/users?limit=5", { headers: bearer(token) });
    await expectUnavailable(res);
    expect(res.elapsedMs).toBeGreaterThanOrEqual(CALL_DEADLINE_MS - 50);
    expect(res.headers.get("Retry-After")).toBe("5");
    log.mockRestore();
  });

  it("at the token endpoint is the bare OAuth body: temporarily_unavailable", async () => {
    const log = quietly();
    const { env } = faultyEnv({ DB: { kind: "outage" } });
    const res = await fetchWith(env, "/oauth/token", {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", ...basicAuth(webClient.id, webClient.secret) },
      body: new URLSearchParams({
        grant_type: "password",
        username: "nobody@example.com",
        password: "x",
        redirect_uri: webClient.redirectUris[0]!,
      }),
    });
    await expectUnavailable(res);
    expect(await res.json()).toEqual({
      error: "temporarily_unavailable",
      error_code: 503,
      type: "ApiException",
      error_description: "The service is briefly unavailable; try again shortly",
    });
    log.mockRestore();
  });

  it("in a browser flow is a localized page that says try again", async () => {
    const log = quietly();
    const { env } = faultyEnv({ DB: { kind: "outage" } });
    const query = new URLSearchParams({
      client_id: webClient.id,
      redirect_uri: webClient.redirectUris[0]!,
      response_type: "code",
    });
    const res = await fetchWith(env, `/oauth/authorize?${query}`, { headers: { "Accept-Language": "nb-NO" } });
    await expectUnavailable(res);
    expect(res.headers.get("Content-Type")).toMatch(/^text\/html/);
    expect(res.headers.get("Content-Security-Policy")).toContain("frame-ancestors 'none'");
    const page = await res.text();
    expect(page).toContain('lang="nb-NO"');
    expect(page).toContain("Vi fikk ikke fullført dette akkurat nå");
    log.mockRestore();
  });

  it("that is no fault of the platform (a bug) stays a generic 500", async () => {
    const token = await serverToken();
    const log = quietly();
    const { env } = faultyEnv({ DB: { kind: "outage", error: () => new Error("D1_ERROR: no such table: clients") } });
    const res = await fetchWith(env, "/api/2/users?limit=7", { headers: bearer(token) });
    expect(res.status).toBe(500);
    expect(res.headers.get("Retry-After")).toBeNull();
    log.mockRestore();
  });
});

describe("a Durable Object fault", () => {
  it("marked retryable is retried for an idempotent call; overloaded is not", async () => {
    const token = await serverToken();
    const log = quietly();
    // Revoking is safe to repeat: one lost call is retried and the revocation lands.
    const once = faultyEnv({ RATE_LIMITER: { kind: "once", error: platformErrors.doCodeUpdated } });
    const revoked = await fetchWith(once.env, "/oauth/revoke", {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", ...basicAuth(webClient.id, webClient.secret) },
      body: new URLSearchParams({ token }),
    });
    expect(revoked.status).toBe(200);
    expect(once.counts.RATE_LIMITER.calls).toBe(2);
    const after = await call("/api/2/clients", { headers: bearer(token) });
    expect(after.status).toBe(401);

    const other = await serverToken();
    const overloaded = faultyEnv({ RATE_LIMITER: { kind: "outage", error: platformErrors.doOverloaded } });
    const res = await fetchWith(overloaded.env, "/oauth/revoke", {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", ...basicAuth(webClient.id, webClient.secret) },
      body: new URLSearchParams({ token: other }),
    });
    await expectUnavailable(res);
    expect(res.headers.get("Retry-After")).toBe("5");
    expect(overloaded.counts.RATE_LIMITER.calls).toBe(1);
    log.mockRestore();
  });
});

describe("what is no fault of the platform, or one not to repeat", () => {
  const exchange = async (env: Bindings) =>
    fetchWith(env, "/api/2/oauth/exchange", {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", ...bearer(await userToken()) },
      body: new URLSearchParams({ clientId: webClient.id, type: "code" }),
    });

  it("a KV 4xx other than 429 is a malformed call: a 500, not retried", async () => {
    const log = quietly();
    const { env, counts } = faultyEnv({
      CODES: { kind: "outage", error: () => new Error("KV PUT failed: 413 Payload Too Large") },
    });
    const res = await exchange(env);
    expect(res.status).toBe(500);
    expect(res.headers.get("Retry-After")).toBeNull();
    expect(counts.CODES.calls).toBe(1);
    log.mockRestore();
  });

  it("a KV 429 is load: a 503 after one call, Retry-After 5", async () => {
    const log = quietly();
    const { env, counts } = faultyEnv({
      CODES: { kind: "outage", error: () => new Error("KV PUT failed: 429 Too Many Requests") },
    });
    const res = await exchange(env);
    expect(res.status).toBe(503);
    expect(res.headers.get("Retry-After")).toBe("5");
    expect(counts.CODES.calls).toBe(1);
    log.mockRestore();
  });

  it("an error the object's own code threw (remote) is a bug: a 500, not retried", async () => {
    const log = quietly();
    const thrown = () => Object.assign(new Error("Cannot read properties of undefined"), { remote: true });
    const other = await createClient();
    const otherToken = await serverToken(other);
    const { env, counts } = faultyEnv({ RATE_LIMITER: { kind: "outage", error: thrown } });
    const res = await fetchWith(env, "/api/2/clients", { headers: bearer(otherToken) });
    expect(res.status).toBe(500);
    expect(res.headers.get("Retry-After")).toBeNull();
    expect(counts.RATE_LIMITER.calls).toBe(1);
    log.mockRestore();
  });

  it("a Durable Object error marked retryable: false is a 503 after one call", async () => {
    const log = quietly();
    const lost = () => Object.assign(new Error("Network connection lost."), { retryable: false });
    // A fresh client's first call in this isolate asks its RateLimiter.
    const other = await createClient();
    const otherToken = await serverToken(other);
    const { env, counts } = faultyEnv({ RATE_LIMITER: { kind: "outage", error: lost } });
    const res = await fetchWith(env, "/api/2/clients", { headers: bearer(otherToken) });
    expect(res.status).toBe(503);
    expect(res.headers.get("Retry-After")).toBe("1");
    expect(counts.RATE_LIMITER.calls).toBe(1);
    log.mockRestore();
  });
});

describe("a Durable Object outage", () => {
  it("leaves a client's calls admitted while this isolate holds a lease for it, then answers 503", async () => {
    const client = await createClient();
    const token = await serverToken(client);
    const log = quietly();
    // The client's first call asks for itself alone; its second, within a lease's time, for a few more.
    for (let i = 0; i < 2; i++) expect((await call("/api/2/clients", { headers: bearer(token) })).status).toBe(200);
    const { env } = faultyEnv({ RATE_LIMITER: { kind: "outage" } });
    const admitted = [];
    for (let i = 0; i < 8; i++)
      admitted.push((await fetchWith(env, "/api/2/clients", { headers: bearer(token) })).status);
    // The lease's slots are admitted as the Durable Object would; once they are spent, the calls wait for it.
    expect(admitted.slice(0, 3)).toEqual([200, 200, 200]);
    expect(admitted.at(-1)).toBe(503);
    log.mockRestore();
  });
});
