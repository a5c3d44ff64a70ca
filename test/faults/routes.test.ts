/**
 * Every route that touches storage, under each fault of each binding it uses: an outage, a
 * one-off failure (what one retry gets past) and a stall. An outage or a stall answers a 503 with
 * Retry-After within the deadline; a one-off failure answers as if nothing had happened. The write
 * flows' own faults, call by call, are in the files beside this one.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { CALL_DEADLINE_MS } from "../../src/platform/calls";
import { type BindingName, type Fault, faultyEnv, fetchWith } from "../helpers/faults";
import { basicAuth, bearer, call, serverToken } from "../helpers/http";
import { createClient, createUser, importData } from "../helpers/seed";

/** The deadline, and room for the Worker's own work beside twelve stalled requests at once. */
const ANSWERED_WITHIN_MS = CALL_DEADLINE_MS + 1_500;
const CALLBACK = "https://test.example/callback";

type Setting = {
  client: { id: string; secret: string };
  userId: number;
  userToken: string;
  refreshToken: string;
  serverToken: string;
  /** Sent with every API read, so that it reaches D1 rather than an isolate's cache. */
  bookmark: string;
};

let nextUser = 9_700;
let nextPage = 1;
let nextProduct = 990_000 + Math.floor(Math.random() * 1000) * 10;

/** A digital content product of the setting's client, held by its user when `held`. */
async function productOf(s: Setting, held: boolean): Promise<number> {
  const productId = nextProduct++;
  const created = "2024-01-01 00:00:00";
  await importData({
    version: 2,
    products: [
      {
        productId,
        clientId: s.client.id,
        type: 1,
        name: "Archive",
        price: "900",
        vat: 2500,
        currency: "NOK",
        status: 3,
        created,
      },
    ],
    digitalContents: held
      ? [
          {
            userProductId: productId,
            productId,
            userId: s.userId,
            clientId: s.client.id,
            status: 3,
            created,
            updated: created,
          },
        ]
      : [],
  });
  return productId;
}

/** A fresh client (so no isolate holds a lease for it) and a fresh user signed in to it. */
async function setting(): Promise<Setting> {
  const client = await createClient({
    grantTypes: ["client_credentials", "password", "authorization_code", "refresh_token"],
    redirectUris: [CALLBACK],
    defaultRedirectUri: CALLBACK,
    autoApprove: true,
  });
  const userId = nextUser++;
  const user = await createUser(userId, { clients: [client.id] });
  const credentials = basicAuth(client.id, client.secret);
  const signIn = await call(
    "/oauth/token",
    form(
      {
        grant_type: "password",
        username: user.email,
        password: user.password,
        redirect_uri: CALLBACK,
        scope: "openid profile",
      },
      credentials,
    ),
  );
  const server = await call("/oauth/token", form({ grant_type: "client_credentials" }, credentials));
  const tokens = (await signIn.json()) as { access_token: string; refresh_token: string };
  return {
    client,
    userId,
    userToken: tokens.access_token,
    refreshToken: tokens.refresh_token,
    serverToken: ((await server.json()) as { access_token: string }).access_token,
    // The sign-in wrote to D1, so its answer carries the session's bookmark.
    bookmark: signIn.headers.get("x-d1-bookmark")!,
  };
}

const form = (fields: Record<string, string>, headers: Record<string, string> = {}): RequestInit => ({
  method: "POST",
  headers: { "Content-Type": "application/x-www-form-urlencoded", ...headers },
  body: new URLSearchParams(fields),
});

/** A fresh admin client's server token (merchant 10, the settings' merchant). */
async function adminToken(): Promise<string> {
  return serverToken(await createClient({ admin: true }));
}

const apiRead = (s: Setting, token: string): RequestInit => ({
  headers: { ...bearer(token), "x-d1-bookmark": s.bookmark },
});

type Route = {
  name: string;
  uses: BindingName[];
  ok: number;
  request: (s: Setting) => [string, RequestInit] | Promise<[string, RequestInit]>;
};

const ROUTES: Route[] = [
  {
    name: "GET /oauth/userinfo",
    uses: ["DB", "RATE_LIMITER"],
    ok: 200,
    request: (s) => ["/oauth/userinfo", { headers: bearer(s.userToken) }],
  },
  {
    name: "POST /oauth/register",
    uses: ["DB", "RATE_LIMITER"],
    ok: 201,
    request: async () => [
      "/oauth/register",
      {
        method: "POST",
        headers: { "Content-Type": "application/json", ...bearer(await adminToken()) },
        body: JSON.stringify({ client_name: "Fault", grant_types: ["client_credentials"], response_types: [] }),
      },
    ],
  },
  {
    name: "GET /api/2/me",
    uses: ["DB", "RATE_LIMITER"],
    ok: 200,
    request: (s) => ["/api/2/me", apiRead(s, s.userToken)],
  },
  {
    name: "GET /api/2/user/{id}",
    uses: ["DB", "RATE_LIMITER"],
    ok: 200,
    request: (s) => [`/api/2/user/${s.userId}`, apiRead(s, s.serverToken)],
  },
  {
    name: "GET /api/2/users",
    uses: ["DB", "RATE_LIMITER"],
    ok: 200,
    request: (s) => [`/api/2/users?limit=${nextPage++}`, apiRead(s, s.serverToken)],
  },
  {
    // The isolate holds the page, and a user entered it since: its versions, then that user by key.
    name: "GET /api/2/users, read again",
    uses: ["DB"],
    ok: 200,
    request: readAgainAfterAUserEntered,
  },
  {
    name: "GET /api/2/clients",
    uses: ["DB", "RATE_LIMITER"],
    ok: 200,
    request: (s) => ["/api/2/clients", apiRead(s, s.serverToken)],
  },
  {
    name: "GET /api/2/products",
    uses: ["DB", "RATE_LIMITER"],
    // A fresh client has no products: the spec's 404 is its normal answer.
    ok: 404,
    request: (s) => ["/api/2/products", apiRead(s, s.serverToken)],
  },
  {
    name: "GET /api/2/digitalcontents",
    uses: ["DB", "RATE_LIMITER"],
    ok: 200,
    request: (s) => ["/api/2/digitalcontents", apiRead(s, s.serverToken)],
  },
  {
    name: "GET /api/2/mail",
    uses: ["DB", "RATE_LIMITER"],
    ok: 200,
    request: (s) => [`/api/2/mail?id=${s.userId}`, apiRead(s, s.serverToken)],
  },
  {
    name: "GET /api/2/describe/{object}",
    uses: ["RATE_LIMITER"],
    ok: 200,
    request: (s) => ["/api/2/describe/User", apiRead(s, s.serverToken)],
  },
  {
    name: "GET /api/2/user/{id}/product/{productId}",
    uses: ["DB", "RATE_LIMITER"],
    ok: 200,
    request: async (s) => [`/api/2/user/${s.userId}/product/${await productOf(s, true)}`, apiRead(s, s.serverToken)],
  },
  {
    name: "GET /api/2/user/{id}/products",
    uses: ["DB", "RATE_LIMITER"],
    ok: 200,
    request: (s) => [`/api/2/user/${s.userId}/products`, apiRead(s, s.serverToken)],
  },
  {
    name: "POST /api/2/user/{id}/product/{productId}",
    uses: ["DB", "RATE_LIMITER"],
    ok: 200,
    request: async (s) => [
      `/api/2/user/${s.userId}/product/${await productOf(s, false)}`,
      { method: "POST", headers: bearer(s.serverToken) },
    ],
  },
  {
    name: "DELETE /api/2/user/{id}/product/{productId}",
    uses: ["DB", "RATE_LIMITER"],
    ok: 200,
    request: async (s) => [
      `/api/2/user/${s.userId}/product/${await productOf(s, true)}`,
      { method: "DELETE", headers: bearer(s.serverToken) },
    ],
  },
  {
    name: "POST /api/2/user/{id}/logout",
    uses: ["DB", "RATE_LIMITER"],
    ok: 200,
    request: async (s) => [`/api/2/user/${s.userId}/logout`, { method: "POST", headers: bearer(await adminToken()) }],
  },
  {
    name: "DELETE /api/2/user/{id}/connection",
    uses: ["DB", "RATE_LIMITER"],
    ok: 200,
    request: (s) => [`/api/2/user/${s.userId}/connection`, { method: "DELETE", headers: bearer(s.userToken) }],
  },
  {
    name: "GET /api/2/user/{id}/export",
    uses: ["DB", "RATE_LIMITER"],
    ok: 200,
    request: (s) => [`/api/2/user/${s.userId}/export`, { headers: bearer(s.userToken) }],
  },
  {
    name: "DELETE /api/2/user/{id}",
    uses: ["DB", "RATE_LIMITER"],
    ok: 200,
    request: async (s) => [`/api/2/user/${s.userId}`, { method: "DELETE", headers: bearer(await adminToken()) }],
  },
  {
    name: "POST /api/2/user",
    uses: ["DB", "RATE_LIMITER"],
    ok: 201,
    request: (s) => [
      "/api/2/user",
      form({ email: `created-${crypto.randomUUID()}@example.org` }, bearer(s.serverToken)),
    ],
  },
  {
    name: "POST /api/2/user/{id}",
    uses: ["DB", "RATE_LIMITER"],
    ok: 200,
    request: (s) => [`/api/2/user/${s.userId}`, form({ displayName: "Changed" }, bearer(s.serverToken))],
  },
  {
    name: "POST /api/2/client/{id}/secret",
    uses: ["DB", "RATE_LIMITER"],
    ok: 200,
    request: async () => [`/api/2/client/${(await createClient()).id}/secret`, form({}, bearer(await adminToken()))],
  },
  {
    name: "POST /api/2/client/{id}/signing-secret",
    uses: ["DB", "RATE_LIMITER"],
    ok: 200,
    request: async () => [
      `/api/2/client/${(await createClient()).id}/signing-secret`,
      form({}, bearer(await adminToken())),
    ],
  },
  {
    name: "POST /api/2/client/{id}/status",
    uses: ["DB", "RATE_LIMITER"],
    ok: 200,
    request: async () => [
      `/api/2/client/${(await createClient()).id}/status`,
      form({ status: "disabled" }, bearer(await adminToken())),
    ],
  },
  {
    name: "POST /api/2/product",
    uses: ["DB", "RATE_LIMITER"],
    ok: 201,
    request: (s) => [
      "/api/2/product",
      form(
        { code: "F", name: "Fault", price: "100", vat: "2500", paymentOptions: "2", type: "1", currency: "NOK" },
        bearer(s.serverToken),
      ),
    ],
  },
  {
    name: "POST /api/2/product/{id}",
    uses: ["DB", "RATE_LIMITER"],
    ok: 200,
    request: async (s) => [
      `/api/2/product/${await productOf(s, false)}`,
      form({ price: "200" }, bearer(s.serverToken)),
    ],
  },
  {
    name: "GET /api/2/audit",
    uses: ["DB", "RATE_LIMITER"],
    ok: 200,
    request: async () => ["/api/2/audit", { headers: bearer(await adminToken()) }],
  },
  {
    name: "POST /api/2/devices",
    uses: ["DB", "RATE_LIMITER"],
    ok: 201,
    request: (s) => [
      "/api/2/devices",
      form(
        { deviceId: `device-${s.userId}`, platform: "iPhone", applicationName: "Nordic Daily" },
        bearer(s.userToken),
      ),
    ],
  },
  {
    name: "POST /api/2/oauth/exchange",
    uses: ["DB", "CODES", "RATE_LIMITER"],
    ok: 200,
    request: (s) => ["/api/2/oauth/exchange", form({ clientId: s.client.id, type: "code" }, bearer(s.userToken))],
  },
  {
    name: "POST /oauth/token client_credentials",
    uses: ["DB"],
    ok: 200,
    // A client this isolate has not authenticated yet: one it has is answered from its cache.
    request: async () => {
      const client = await createClient();
      return ["/oauth/token", form({ grant_type: "client_credentials" }, basicAuth(client.id, client.secret))];
    },
  },
  {
    name: "POST /oauth/token password",
    uses: ["DB", "RATE_LIMITER"],
    ok: 200,
    request: (s) => [
      "/oauth/token",
      form(
        {
          grant_type: "password",
          username: `user${s.userId}@example.org`,
          password: "a long enough passphrase",
          redirect_uri: CALLBACK,
        },
        basicAuth(s.client.id, s.client.secret),
      ),
    ],
  },
  {
    name: "POST /oauth/introspect",
    uses: ["DB", "RATE_LIMITER"],
    ok: 200,
    request: (s) => ["/oauth/introspect", form({ token: s.userToken }, basicAuth(s.client.id, s.client.secret))],
  },
  {
    name: "POST /oauth/revoke",
    uses: ["DB", "RATE_LIMITER"],
    ok: 200,
    request: (s) => ["/oauth/revoke", form({ token: s.refreshToken }, basicAuth(s.client.id, s.client.secret))],
  },
  {
    name: "GET /flow/login",
    uses: ["DB"],
    ok: 200,
    request: (s) => [
      `/flow/login?${new URLSearchParams({ client_id: s.client.id, redirect_uri: CALLBACK, response_type: "code" })}`,
      {},
    ],
  },
  {
    name: "GET /logout",
    uses: ["DB"],
    ok: 303,
    request: (s) => [`/logout?${new URLSearchParams({ client_id: s.client.id, redirect_uri: CALLBACK })}`, {}],
  },
  {
    name: "GET /oauth/authorize",
    uses: ["DB"],
    ok: 200,
    request: (s) => [
      `/oauth/authorize?${new URLSearchParams({ client_id: s.client.id, redirect_uri: CALLBACK, response_type: "code" })}`,
      {},
    ],
  },
];

/** The setting's users page read once, then a user connected to its client: the page read again. */
async function readAgainAfterAUserEntered(s: Setting): Promise<[string, RequestInit]> {
  const path = "/api/2/users?limit=10";
  expect((await call(path, apiRead(s, s.serverToken))).status).toBe(200);
  await createUser(nextUser++, { clients: [s.client.id] });
  return [path, apiRead(s, s.serverToken)];
}

const CASES = ROUTES.flatMap((route) => route.uses.map((binding) => ({ route, binding })));

async function run(route: Route, binding: BindingName, fault: Fault) {
  const s = await setting();
  const { env, counts } = faultyEnv({ [binding]: fault });
  const [path, init] = await route.request(s);
  const res = await fetchWith(env, path, init);
  return { res, count: counts[binding] };
}

let log: ReturnType<typeof vi.spyOn>;
beforeAll(() => {
  // Each fault given up is logged once; the layer's log is tested in test/platform-layer.test.ts.
  log = vi.spyOn(console, "error").mockImplementation(() => {});
});
afterAll(() => log.mockRestore());

describe("an outage of one binding", () => {
  it.each(CASES.map(({ route, binding }) => [route.name, binding, route] as const))(
    "%s, %s: 503 with Retry-After, within the deadline",
    async (_, binding, route) => {
      const { res, count } = await run(route, binding, { kind: "outage" });
      expect(count.failed, `${res.status} ${await res.clone().text()}`).toBeGreaterThan(0);
      expect(res.status).toBe(503);
      expect(Number(res.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
      expect(res.elapsedMs).toBeLessThan(ANSWERED_WITHIN_MS);
    },
  );
});

describe("a one-off failure", () => {
  it.each(CASES.map(({ route, binding }) => [route.name, binding, route] as const))(
    "%s, %s: answered as if nothing had happened",
    async (_, binding, route) => {
      const { res, count } = await run(route, binding, { kind: "once" });
      expect(count.failed).toBe(1);
      expect(res.status, await res.clone().text()).toBe(route.ok);
    },
  );
});

describe("a users page read again", () => {
  it("answers the whole page when the read of the users who entered it fails once", async () => {
    const s = await setting();
    const [path, init] = await readAgainAfterAUserEntered(s);
    // The first D1 call is the page's versions, the second the entering user by key.
    const { env, counts } = faultyEnv({ DB: { kind: "nth", n: 2, applied: false } });
    const res = await fetchWith(env, path, init);
    expect(counts.DB.failed).toBe(1);
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as { data: { userId: string }[] };
    expect(data).toHaveLength(2);
  });
});

describe("a stall", () => {
  /** Stalled requests at once: each holds the isolate's work for a deadline, and they share its time. */
  const AT_ONCE = 12;

  it("of any binding a route uses is given up at the deadline: every route answers 503 in time", async () => {
    const outcomes: string[] = [];
    for (let i = 0; i < CASES.length; i += AT_ONCE) {
      const batch = CASES.slice(i, i + AT_ONCE).map(async ({ route, binding }) => {
        const { res } = await run(route, binding, { kind: "stall" });
        await res.body?.cancel();
        return `${route.name}, ${binding}: ${res.status} in ${res.elapsedMs < ANSWERED_WITHIN_MS ? "time" : `${res.elapsedMs} ms`}`;
      });
      outcomes.push(...(await Promise.all(batch)));
    }
    expect(outcomes).toEqual(CASES.map(({ route, binding }) => `${route.name}, ${binding}: 503 in time`));
  }, 60_000);
});
