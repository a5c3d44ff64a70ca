/**
 * The routes measured against the baseline: status, the client_credentials and refresh_token
 * grants (a chain of refresh tokens rotated per connection), authenticated calls with server and
 * user tokens, a management write (a profile change), and a call once REVOCATIONS access tokens
 * of the client have been revoked.
 */
import type autocannon from "autocannon";
import demo from "../../../data/demo.json" with { type: "json" };
import { fmt } from "../bench-runtime";
import type { Comparison, LoadMeter, Route } from "./measure";
import { BASIC, CONNECTIONS, FORM, PERSISTENT_BASIC, ROUNDS, ROUTE_FILTER } from "./plan";
import { durableObjectShare } from "./twin-figures";
import { fetchToken, type Target, type Targets } from "./workers";

/** Access tokens of the benchmark client revoked before the last authenticated route is loaded. */
const REVOCATIONS = 1_000;

/** A route's comparison, and for an authenticated one the share of calls that waited on the Durable Object. */
export type RouteFigures = { label: string; comparison: Comparison; share: string };

/** Each route on the service and on the baseline; the twin gives the Durable Object's share. */
export async function benchRoutes(meter: LoadMeter, { service, baseline, twin }: Targets): Promise<RouteFigures[]> {
  // The connections rotate chains from this pool; each run (the warm-up and every round) ends with
  // up to one request in flight per connection, whose chain it takes along.
  const chains = 2 * (ROUNDS + 1) * CONNECTIONS;
  const { refreshTokens, accessToken } = await signIns(service.url, chains, BASIC);
  const persistent = await signIns(service.url, chains, PERSISTENT_BASIC);
  service.userToken = twin.userToken = accessToken;
  const figures: RouteFigures[] = [];
  const chosen = routes(refreshTokens, persistent.refreshTokens).filter(
    (route) => ROUTE_FILTER.length === 0 || ROUTE_FILTER.some((word) => route.label.includes(word)),
  );
  for (const route of chosen) {
    if (route.before) await route.before(service);
    const comparison = await meter.compare(service, baseline, route);
    const share = route.authenticated ? await durableObjectShare(twin, route) : "";
    figures.push({ label: route.label, comparison, share });
  }
  return figures;
}

function routes(refreshTokens: string[], persistentTokens: string[]): Route[] {
  const bearer = (t: Target) => ({ Authorization: `Bearer ${t.serverToken}` });
  return [
    { label: "GET /api/2/status", method: "GET", path: "/api/2/status", headers: () => ({}) },
    {
      label: "POST /oauth/token (client_credentials)",
      method: "POST",
      path: "/oauth/token",
      body: "grant_type=client_credentials",
      headers: () => ({ Authorization: BASIC, "Content-Type": FORM }),
    },
    {
      label: "POST /oauth/token (refresh_token)",
      method: "POST",
      path: "/oauth/token",
      body: "grant_type=refresh_token",
      headers: () => ({ Authorization: BASIC, "Content-Type": FORM }),
      requests: [refreshChain(refreshTokens)],
    },
    {
      // The same grant for a client with persistent refresh tokens: no D1, one Durable Object read.
      label: "POST /oauth/token (refresh_token, persistent)",
      method: "POST",
      path: "/oauth/token",
      body: "grant_type=refresh_token",
      headers: () => ({ Authorization: PERSISTENT_BASIC, "Content-Type": FORM }),
      requests: [refreshChain(persistentTokens)],
    },
    {
      label: "GET /api/2/clients (server token)",
      method: "GET",
      path: "/api/2/clients",
      headers: bearer,
      authenticated: true,
    },
    {
      label: "GET /api/2/me (user token)",
      method: "GET",
      path: "/api/2/me",
      // The baseline verifies whichever token it is given; it has no user tokens of its own.
      headers: (t) => ({ Authorization: `Bearer ${t.userToken ?? t.serverToken}` }),
      authenticated: true,
    },
    {
      // A management write: the profile's change and its audit entry, one D1 batch at the primary.
      label: "POST /api/2/user/{id} (profile change)",
      method: "POST",
      path: `/api/2/user/${demo.users[0]!.userId}`,
      body: "displayName=Bench",
      headers: (t) => ({ ...bearer(t), "Content-Type": FORM }),
      authenticated: true,
    },
    {
      label: `GET /api/2/clients (${fmt(REVOCATIONS)} tokens revoked)`,
      method: "GET",
      path: "/api/2/clients",
      headers: bearer,
      before: revokeTokens,
      authenticated: true,
    },
  ];
}

/**
 * One request that rotates a refresh token taken from `pool` and puts each answer's successor
 * back: the tokens circulate among the connections (autocannon resets a connection's own context
 * after every pass over its requests, so the chain cannot live there). A failed rotation's chain
 * ends; a run's last requests in flight take theirs with them.
 */
function refreshChain(pool: string[]): autocannon.Request {
  return {
    setupRequest: (request) => ({ ...request, body: `grant_type=refresh_token&refresh_token=${pool.pop() ?? ""}` }),
    onResponse: (status, body) => {
      if (status === 200) pool.push((JSON.parse(body) as { refresh_token: string }).refresh_token);
    },
  };
}

/** Refresh tokens of the demo's first user for a benchmark client, from as many password sign-ins, and an access token. */
async function signIns(
  url: string,
  count: number,
  basic: string,
): Promise<{ refreshTokens: string[]; accessToken: string }> {
  const user = demo.users[0]!;
  const tokens: string[] = [];
  let accessToken = "";
  for (let i = 0; i < count; i++) {
    const res = await fetch(`${url}/oauth/token`, {
      method: "POST",
      headers: { Authorization: basic, "Content-Type": FORM },
      body: new URLSearchParams({
        grant_type: "password",
        username: user.email,
        password: user.password!,
        redirect_uri: demo.clients[0]!.redirectUris[0]!,
      }),
    });
    if (!res.ok) throw new Error(`password sign-in for the benchmark: ${res.status} ${await res.text()}`);
    const body = (await res.json()) as { refresh_token: string; access_token: string };
    tokens.push(body.refresh_token);
    accessToken = body.access_token;
  }
  return { refreshTokens: tokens, accessToken };
}

/** REVOCATIONS fresh server tokens of the benchmark client, each revoked at /oauth/revoke. */
async function revokeTokens(service: Target): Promise<void> {
  for (let i = 0; i < REVOCATIONS; i++) {
    const token = await fetchToken(service.url);
    const res = await fetch(`${service.url}/oauth/revoke`, {
      method: "POST",
      headers: { Authorization: BASIC, "Content-Type": FORM },
      body: new URLSearchParams({ token }),
    });
    if (!res.ok) throw new Error(`revocation for the benchmark: ${res.status}`);
  }
}
