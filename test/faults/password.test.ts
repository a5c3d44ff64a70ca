/**
 * Password sign-ins under a fault of each storage call they make, at the token endpoint
 * (grant_type=password) and on the login page (POST /oauth/authorize), each call failed before
 * and after it did its work, once (what the platform layer retries) or for good (a 503): the
 * retry signs the user in, and a storage fault is never counted as a failed password. The
 * throttle fails closed: with its Durable Object down a sign-in is a 503, never an unthrottled
 * guess, and a wrong password is told only once it is counted.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { rateLimiterFor } from "../../src/durable-objects/rate-limiter";
import { SIGN_IN_SETTLE_MS } from "../../src/durable-objects/password-throttle";
import type { Bindings } from "../../src/env";
import { Browser, hiddenFields, redirectParameters } from "../helpers/browser";
import { type BindingName, type Fault, faultyEnv, fetchWith, platformErrors } from "../helpers/faults";
import { basicAuth, bearer, call, postForm } from "../helpers/http";
import { createClient, createUser } from "../helpers/seed";

const CALLBACK = "https://test.example/callback";
const NETWORK = "192.0.2.77";
let nextUser = 16_000 + Math.floor(Math.random() * 50) * 20;

/** One storage call of a flow, in the order the flow makes them: the `n`th call to `binding`. */
type StorageCall = { binding: BindingName; n: number; what: string; write?: true };

/** Errors the layer gives up on at once: the platform is overloaded, and repeating adds to it. */
const GIVEN_UP = {
  DB: () => new Error("D1_ERROR: D1 DB is overloaded. Too many requests queued."),
  RATE_LIMITER: platformErrors.doOverloaded,
};

/**
 * Every call failed before and after it was applied, once (the platform's transient error, which
 * the layer retries unless the call is a D1 write) and for good. KV names no overload: a KV call
 * is given up once its retries fail too, which only an outage does.
 */
function casesOf(calls: readonly StorageCall[]) {
  return calls.flatMap((step) =>
    [false, true].flatMap((applied) =>
      [false, true]
        .filter((givenUp) => !(givenUp && applied && step.binding === "CODES"))
        .map((givenUp) => {
          let fault: Fault = { kind: "nth", n: step.n, applied };
          if (givenUp && step.binding === "CODES") fault = { kind: "outage" };
          else if (givenUp && (step.binding === "DB" || step.binding === "RATE_LIMITER")) {
            fault = { ...fault, error: GIVEN_UP[step.binding] };
          }
          return {
            name: `${step.what}, ${applied ? "after" : "before"} it was applied, ${givenUp ? "for good" : "once"}`,
            at: step,
            applied,
            givenUp,
            fault,
            answered: !givenUp && !step.write,
          };
        }),
    ),
  );
}

async function expectUnavailable(res: Response) {
  expect(res.status).toBe(503);
  expect(Number(res.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
  await res.body?.cancel();
}

type Client = { id: string; secret: string };

/** A fresh client (its own throttle) and a user of it, the client's record cached as in use. */
async function setting() {
  const client = await createClient({
    grantTypes: ["password", "authorization_code", "client_credentials"],
    autoApprove: true,
  });
  const user = await createUser(nextUser++, { clients: [client.id] });
  await (
    await postForm("/oauth/token", { grant_type: "client_credentials" }, basicAuth(client.id, client.secret))
  ).body?.cancel();
  return { client, user };
}

function passwordGrant(client: Client, username: string, password: string): RequestInit {
  return {
    method: "POST",
    headers: {
      "Content-Type": "application/x-www-form-urlencoded",
      "CF-Connecting-IP": NETWORK,
      ...basicAuth(client.id, client.secret),
    },
    body: new URLSearchParams({ grant_type: "password", username, password, redirect_uri: CALLBACK }),
  };
}

/** The throttle as it stands: failures counted per counter, and attempts pending now. */
function throttleOf(client: Client) {
  return runInDurableObject(rateLimiterFor(env, client.id), (_, state) => ({
    failures: state.storage.sql
      .exec<{ account: string; network: string; count: number }>(
        "SELECT account, network, count FROM password_failures WHERE ends_at > ? ORDER BY account, network",
        Date.now(),
      )
      .toArray(),
    pending: state.storage.sql
      .exec<{ n: number }>("SELECT count(*) AS n FROM password_attempts WHERE settle_by > ?", Date.now())
      .one().n,
  }));
}

/** Nothing counted against the user or the network: no failure, no attempt still in progress. */
async function expectNothingCounted(client: Client) {
  expect(await throttleOf(client)).toEqual({ failures: [], pending: 0 });
}

let log: ReturnType<typeof vi.spyOn>;
beforeAll(() => {
  // Each fault given up is logged once; the layer's log is tested in test/platform-layer.test.ts.
  log = vi.spyOn(console, "error").mockImplementation(() => {});
});
afterAll(() => log.mockRestore());
afterEach(() => vi.useRealTimers());

describe("grant_type=password with the right password under a storage fault", () => {
  const CALLS: StorageCall[] = [
    { binding: "DB", n: 1, what: "the user's read" },
    { binding: "RATE_LIMITER", n: 1, what: "the attempt's begin" },
    { binding: "RATE_LIMITER", n: 2, what: "its success" },
    { binding: "DB", n: 2, what: "the connection's read" },
    { binding: "DB", n: 3, what: "the tokens' batch", write: true },
  ];

  it("makes the calls these cases fail, and no others", async () => {
    const { client, user } = await setting();
    const { env: clean, counts } = faultyEnv({});
    expect((await fetchWith(clean, "/oauth/token", passwordGrant(client, user.email, user.password))).status).toBe(200);
    for (const binding of ["CODES", "RATE_LIMITER", "DB", "LINK_REQUESTS"] as const) {
      expect(counts[binding].calls).toBe(CALLS.filter((c) => c.binding === binding).length);
    }
  });

  it.each(casesOf(CALLS))("at $name: the retry signs in, and nothing is counted", async ({ at, fault, answered }) => {
    const { client, user } = await setting();
    const request = () => passwordGrant(client, user.email, user.password);
    let res = await fetchWith(faultyEnv({ [at.binding]: fault }).env, "/oauth/token", request());
    if (!answered) {
      await expectUnavailable(res);
      await expectNothingCounted(client);
      res = await fetchWith(env, "/oauth/token", request());
    }
    expect(res.status).toBe(200);
    const { access_token } = (await res.json()) as { access_token: string };
    const me = await call("/api/2/me", { headers: bearer(access_token) });
    expect(me.status).toBe(200);
    await me.body?.cancel();
    await expectNothingCounted(client);
  });

  it("five times in a row for good: the user is not held, and signs in", async () => {
    const { client, user } = await setting();
    for (let i = 0; i < 5; i++) {
      // Alternately the begin's answer and the success lost for good, after they were applied.
      const n = i % 2 === 0 ? 1 : 2;
      const lost = faultyEnv({ RATE_LIMITER: { kind: "nth", n, applied: true, error: GIVEN_UP.RATE_LIMITER } });
      await expectUnavailable(
        await fetchWith(lost.env, "/oauth/token", passwordGrant(client, user.email, user.password)),
      );
    }
    await expectNothingCounted(client);
    expect((await fetchWith(env, "/oauth/token", passwordGrant(client, user.email, user.password))).status).toBe(200);
  });

  it("with the attempt never settled, not even abandoned: it holds the next for seconds, never counts", async () => {
    const start = Date.now();
    vi.useFakeTimers({ toFake: ["Date"], now: start });
    const { client, user } = await setting();
    for (let i = 0; i < 5; i++) {
      // The begin lands; the success and the abandoning that follows it are both lost.
      const successLost = faultyEnv({
        RATE_LIMITER: { kind: "nth", n: 2, applied: false, error: GIVEN_UP.RATE_LIMITER },
      });
      const alsoAbandoning = faultyEnv(
        { RATE_LIMITER: { kind: "nth", n: 3, applied: false, error: GIVEN_UP.RATE_LIMITER } },
        successLost.env,
      );
      await expectUnavailable(
        await fetchWith(alsoAbandoning.env, "/oauth/token", passwordGrant(client, user.email, user.password)),
      );
      expect(successLost.counts.RATE_LIMITER.failed + alsoAbandoning.counts.RATE_LIMITER.failed).toBe(2);
    }
    expect(await throttleOf(client)).toEqual({ failures: [], pending: 5 });
    // Five attempts still in progress hold this network's next one, until the first is due.
    const held = await fetchWith(env, "/oauth/token", passwordGrant(client, user.email, user.password));
    expect(held.status).toBe(420);
    const retryAfter = Number(held.headers.get("Retry-After"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(SIGN_IN_SETTLE_MS / 1000);
    await held.body?.cancel();

    vi.setSystemTime(start + SIGN_IN_SETTLE_MS);
    await expectNothingCounted(client);
    expect((await fetchWith(env, "/oauth/token", passwordGrant(client, user.email, user.password))).status).toBe(200);
  });
});

describe("grant_type=password with a wrong password under a storage fault", () => {
  const CALLS: StorageCall[] = [
    { binding: "DB", n: 1, what: "the user's read" },
    { binding: "RATE_LIMITER", n: 1, what: "the attempt's begin" },
    { binding: "RATE_LIMITER", n: 2, what: "its failure" },
  ];

  it("makes the calls these cases fail, and no others", async () => {
    const { client, user } = await setting();
    const { env: clean, counts } = faultyEnv({});
    expect((await fetchWith(clean, "/oauth/token", passwordGrant(client, user.email, "a wrong guess"))).status).toBe(
      400,
    );
    // And two more D1 calls, off the answer: the failure's audit entry, after whether its
    // account is the merchant's (below).
    for (const binding of ["CODES", "RATE_LIMITER", "DB", "LINK_REQUESTS"] as const) {
      const audit = binding === "DB" ? 2 : 0;
      expect(counts[binding].calls).toBe(CALLS.filter((c) => c.binding === binding).length + audit);
    }
  });

  it("the failure's audit entry failing changes nothing: the guess is told and counted", async () => {
    const { client, user } = await setting();
    const faulty = faultyEnv({ DB: { kind: "nth", n: 2, applied: false, error: GIVEN_UP.DB } });
    const res = await fetchWith(faulty.env, "/oauth/token", passwordGrant(client, user.email, "a wrong guess"));
    expect(res.status).toBe(400);
    expect(faulty.counts.DB.failed).toBe(1);
  });

  it.each(casesOf(CALLS))(
    "at $name: a guess is told only once it is counted, and counted once",
    async ({ at, applied, givenUp, fault, answered }) => {
      const { client, user } = await setting();
      const guess = () => passwordGrant(client, user.email, "a wrong guess");
      let told = 0;
      const first = await fetchWith(faultyEnv({ [at.binding]: fault }).env, "/oauth/token", guess());
      if (answered) {
        expect(first.status).toBe(400);
        told += 1;
      } else await expectUnavailable(first);
      const retry = await fetchWith(env, "/oauth/token", guess());
      expect(retry.status).toBe(400);
      told += 1;
      // A failure recorded whose answer was then lost for good stays counted: the password was
      // wrong, and counting it errs towards refusing.
      const recordedUntold = givenUp && applied && at.what === "its failure" ? 1 : 0;
      const { failures, pending } = await throttleOf(client);
      expect(pending).toBe(0);
      expect(failures.find((f) => f.account !== "*" && f.network === NETWORK)?.count).toBe(told + recordedUntold);
      const right = await fetchWith(env, "/oauth/token", passwordGrant(client, user.email, user.password));
      expect(right.status).toBe(200);
    },
  );
});

describe("the throttle's Durable Object down", () => {
  it("answers 503 to every sign-in, a wrong password too, and counts nothing", async () => {
    const { client, user } = await setting();
    const down = faultyEnv({ RATE_LIMITER: { kind: "outage" } }).env;
    for (const password of [user.password, "a wrong guess", "another wrong guess"]) {
      await expectUnavailable(await fetchWith(down, "/oauth/token", passwordGrant(client, user.email, password)));
    }
    await expectNothingCounted(client);
  });
});

describe("POST /oauth/authorize (action=login) under a storage fault", () => {
  const CALLS: StorageCall[] = [
    { binding: "DB", n: 1, what: "the client's read" },
    { binding: "DB", n: 2, what: "the user's read" },
    { binding: "RATE_LIMITER", n: 1, what: "the attempt's begin" },
    { binding: "RATE_LIMITER", n: 2, what: "its success" },
    { binding: "DB", n: 3, what: "the session's batch", write: true },
    { binding: "CODES", n: 1, what: "the code's write" },
  ];

  /** The login page, open in a browser on NETWORK, and its form's submission through `faulty`. */
  async function loginPage(client: Client) {
    const browser = new Browser({ "CF-Connecting-IP": NETWORK });
    const query = new URLSearchParams({ client_id: client.id, redirect_uri: CALLBACK, response_type: "code" });
    const page = await (await browser.get(`/oauth/authorize?${query}`)).text();
    return (faulty: Bindings, fields: Record<string, string>) =>
      fetchWith(faulty, "/oauth/authorize", {
        method: "POST",
        headers: {
          "Content-Type": "application/x-www-form-urlencoded",
          "CF-Connecting-IP": NETWORK,
          Cookie: [...browser.cookies].map(([name, value]) => `${name}=${value}`).join("; "),
        },
        body: new URLSearchParams({ ...hiddenFields(page), action: "login", ...fields }),
        redirect: "manual",
      });
  }

  it("makes the calls these cases fail, and no others", async () => {
    const { client, user } = await setting();
    const submit = await loginPage(client);
    const { env: clean, counts } = faultyEnv({});
    expect((await submit(clean, { email: user.email, password: user.password })).status).toBe(303);
    for (const binding of ["CODES", "RATE_LIMITER", "DB", "LINK_REQUESTS"] as const) {
      expect(counts[binding].calls).toBe(CALLS.filter((c) => c.binding === binding).length);
    }
  });

  it.each(casesOf(CALLS))(
    "at $name: the form sent again signs in, and nothing is counted",
    async ({ at, fault, answered }) => {
      const { client, user } = await setting();
      const submit = await loginPage(client);
      const credentials = { email: user.email, password: user.password };
      let res = await submit(faultyEnv({ [at.binding]: fault }).env, credentials);
      if (!answered) {
        await expectUnavailable(res);
        await expectNothingCounted(client);
        res = await submit(env, credentials);
      }
      expect(res.status).toBe(303);
      expect(redirectParameters(res).params.get("code")).toBeTruthy();
      await expectNothingCounted(client);
    },
  );
});

describe("a password attempt at the client's RateLimiter", () => {
  const origin = { network: NETWORK, caller: "browser" } as const;

  it("is begun once however often its begin is repeated, and failed once however often that is", async () => {
    const client = await createClient();
    const limiter = rateLimiterFor(env, client.id);
    for (let i = 0; i < 6; i++) {
      expect(await limiter.beginSignIn("user:1", 5, origin, "attempt-a")).toEqual({ allowed: true, pending: true });
    }
    await limiter.signInFailed("attempt-a");
    await limiter.signInFailed("attempt-a");
    expect((await throttleOf(client)).failures).toEqual([
      { account: "*", network: NETWORK, count: 1 },
      { account: "user:1", network: "*", count: 1 },
      { account: "user:1", network: NETWORK, count: 1 },
    ]);
  });

  it("counts pending attempts against the limit, so parallel guesses are held, until they are settled", async () => {
    const client = await createClient();
    const limiter = rateLimiterFor(env, client.id);
    for (const attempt of ["a", "b", "c", "d", "e"]) {
      expect(await limiter.beginSignIn("user:2", 5, origin, attempt)).toEqual({ allowed: true, pending: true });
    }
    const held = await limiter.beginSignIn("user:2", 5, origin, "f");
    expect(held).toMatchObject({ allowed: false });
    expect(held.allowed === false && held.retryAfter).toBeLessThanOrEqual(SIGN_IN_SETTLE_MS / 1000);
    // One abandoned (a fault ended it): counted no more, and the next attempt is let in.
    await limiter.signInAbandoned("a");
    expect(await limiter.beginSignIn("user:2", 5, origin, "f")).toEqual({ allowed: true, pending: true });
    // All failed: held to the window's end.
    for (const attempt of ["b", "c", "d", "e", "f"]) await limiter.signInFailed(attempt);
    const window = await limiter.beginSignIn("user:2", 5, origin, "g");
    expect(window.allowed === false && window.retryAfter).toBeGreaterThan(60);
  });

  it("takes a success back whatever it repeats, and a success after the failure was told keeps that failure", async () => {
    const client = await createClient();
    const limiter = rateLimiterFor(env, client.id);
    await limiter.beginSignIn("user:3", 5, origin, "wrong");
    await limiter.signInFailed("wrong");
    await limiter.signInAbandoned("wrong");
    await limiter.beginSignIn("user:3", 5, origin, "right");
    await limiter.signInSucceeded("user:3", origin, "right");
    await limiter.signInSucceeded("user:3", origin, "right");
    // The account's failures are cleared; the network keeps the one wrong password.
    expect(await throttleOf(client)).toEqual({
      failures: [{ account: "*", network: NETWORK, count: 1 }],
      pending: 0,
    });
  });

  it("is counted at once for a Worker from before attempts were settled (a rolling deploy)", async () => {
    const client = await createClient();
    const limiter = rateLimiterFor(env, client.id);
    expect(await limiter.beginSignIn("user:4", 5, origin)).toEqual({ allowed: true });
    expect((await throttleOf(client)).failures).toHaveLength(3);
    await limiter.signInSucceeded("user:4", origin);
    expect(await throttleOf(client)).toEqual({ failures: [{ account: "*", network: NETWORK, count: 0 }], pending: 0 });
  });
});
