/**
 * POST /oauth/revoke under the platform's faults: it answers 200 only when everything it revokes
 * is revoked (the grant's access tokens at its client's RateLimiter, its refresh tokens in D1);
 * any storage call failing, before or after it was applied, answers 503, and the client's retry
 * finishes the revocation.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type BindingName, faultyEnv, fetchWith, platformErrors } from "../helpers/faults";
import { basicAuth, bearer, call, expectOAuthError, postForm } from "../helpers/http";
import { createClient, createUser } from "../helpers/seed";

const CALLBACK = "https://test.example/callback";
let nextUser = 9_800;

/** A fresh client and a user signed in to it: an access token and the refresh token of its grant. */
async function signedIn() {
  const client = await createClient({ grantTypes: ["password", "refresh_token"], redirectUris: [CALLBACK] });
  const user = await createUser(nextUser++, { clients: [client.id] });
  const res = await postForm(
    "/oauth/token",
    { grant_type: "password", username: user.email, password: user.password, redirect_uri: CALLBACK },
    basicAuth(client.id, client.secret),
  );
  const tokens = (await res.json()) as { access_token: string; refresh_token: string };
  return { client, access: tokens.access_token, refresh: tokens.refresh_token };
}

function revokeRequest(client: { id: string; secret: string }, token: string): RequestInit {
  return {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", ...basicAuth(client.id, client.secret) },
    body: new URLSearchParams({ token }),
  };
}

/** The grant is over: its access token is refused and its refresh token refreshes nothing. */
async function expectGrantRevoked(s: Awaited<ReturnType<typeof signedIn>>) {
  expect((await call("/api/2/me", { headers: bearer(s.access) })).status).toBe(401);
  const refreshed = await postForm(
    "/oauth/token",
    { grant_type: "refresh_token", refresh_token: s.refresh },
    basicAuth(s.client.id, s.client.secret),
  );
  await expectOAuthError(refreshed, "invalid_grant");
}

/** The storage calls a refresh token's revocation makes, per binding, counted on a clean run. */
async function callsOfRevocation(): Promise<Record<BindingName, number>> {
  const s = await signedIn();
  const { env, counts } = faultyEnv({});
  expect((await fetchWith(env, "/oauth/revoke", revokeRequest(s.client, s.refresh))).status).toBe(200);
  return {
    DB: counts.DB.calls,
    CODES: counts.CODES.calls,
    RATE_LIMITER: counts.RATE_LIMITER.calls,
    LINK_REQUESTS: counts.LINK_REQUESTS.calls,
    LOGOUT_NOTICES: counts.LOGOUT_NOTICES.calls,
  };
}

let log: ReturnType<typeof vi.spyOn>;
beforeAll(() => {
  log = vi.spyOn(console, "error").mockImplementation(() => {});
});
afterAll(() => log.mockRestore());

describe("POST /oauth/revoke of a refresh token, a storage call failing", () => {
  it("makes the calls these cases fail: a D1 read and write, one RateLimiter call", async () => {
    expect(await callsOfRevocation()).toEqual({
      DB: 2,
      CODES: 0,
      RATE_LIMITER: 1,
      LINK_REQUESTS: 0,
      LOGOUT_NOTICES: 0,
    });
  });

  // The read is retried past a one-off failure; the RateLimiter's overloaded error and the D1
  // write are not: their first answer is a 503 whose retry finishes the revocation.
  const CASES = [
    { binding: "DB", n: 1, applied: false, first: 200 },
    { binding: "DB", n: 1, applied: true, first: 200 },
    { binding: "DB", n: 2, applied: false, first: 503 },
    { binding: "DB", n: 2, applied: true, first: 503 },
    { binding: "RATE_LIMITER", n: 1, applied: false, first: 503 },
    { binding: "RATE_LIMITER", n: 1, applied: true, first: 503 },
  ] as const;

  it.each(CASES)(
    "$binding call $n, applied: $applied: $first, then the whole grant is revoked",
    async ({ binding, n, applied, first }) => {
      const s = await signedIn();
      const error = binding === "RATE_LIMITER" ? platformErrors.doOverloaded : undefined;
      const { env, counts } = faultyEnv({ [binding]: { kind: "nth", n, applied, error } });
      const res = await fetchWith(env, "/oauth/revoke", revokeRequest(s.client, s.refresh));
      expect(counts[binding].failed).toBe(1);
      expect(res.status).toBe(first);
      if (first === 503) {
        expect(res.headers.get("Retry-After")).not.toBeNull();
        expect((await fetchWith(env, "/oauth/revoke", revokeRequest(s.client, s.refresh))).status).toBe(200);
      }
      await expectGrantRevoked(s);
    },
  );
});
