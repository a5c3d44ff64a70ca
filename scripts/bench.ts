/**
 * npm run bench: loads the service and a bare baseline worker (bench/baseline.ts) side by side in
 * one local workerd through Miniflare, each on its own socket (no `wrangler dev` proxy or router in
 * front), with the real local D1, KV and Durable Object bindings built from wrangler.toml, and
 * prints requests/s, p50/p99 latency, the service-to-baseline ratio and the CPU ratio (workerd's
 * CPU a request, from /proc) for its routes (the refresh grant rotating a chain of refresh tokens
 * per connection, and an authenticated call once REVOCATIONS access tokens of the client have been
 * revoked); then loads
 * user searches on 1,000 and on 100,000 generated users (imported outside the timed part), as
 * callers without a bookmark get them (mostly from the isolate's read cache) and with one (from
 * D1), reporting the D1 rows each request reads (from the twin's Server-Timing header); then the
 * gzipped bundle size.
 * The timed load goes to the service as production runs it (no Server-Timing), in ROUNDS rounds
 * alternating with the baseline; the figures only Server-Timing gives come from its development
 * twin on the same state, in passes of their own.
 * BENCH_SECONDS (default 5) and BENCH_CONNECTIONS (default 10) bound the load. Everything it
 * starts is stopped before it exits.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import autocannon from "autocannon";
import type { Miniflare } from "miniflare";
import demo from "../data/demo.json" with { type: "json" };
import {
  bundle,
  buildService,
  DEVELOPMENT_TWIN,
  fmt,
  importScript,
  printTable,
  seed,
  startRuntime,
  workerdCpuReader,
  workerUrl,
} from "./lib/bench-runtime";
import { generateDataProtectionKey, generateSigningKeys } from "./lib/keys";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
/**
 * A route's BENCH_SECONDS per worker are split into this many rounds, service then baseline in
 * each, so that a change in the machine's other load falls on both; the ratio is the rounds' median.
 */
const ROUNDS = 3;
const BENCH_CLIENT = { id: "bench0000000000000000000", secret: "bench-client-secret-0000000000" };
const BASIC = `Basic ${Buffer.from(`${BENCH_CLIENT.id}:${BENCH_CLIENT.secret}`).toString("base64")}`;
const FORM = "application/x-www-form-urlencoded";

const BENCH_USER_FIRST_ID = 100_000;
/** Access tokens of the benchmark client revoked before the last authenticated route is loaded. */
const REVOCATIONS = 1_000;
/** The user the searches look for: present in both data sets. */
const SEARCHED_USER = 500;

/** The last bookmark the twin returned: sent back, it makes a read skip the isolate's read cache. */
let lastBookmark: string | null = null;

/** The workerd process's CPU so far (µs), where /proc has it; set once the runtime runs. */
let workerdCpu: (() => number) | null = null;

/** `cpuPerRequest`: workerd's CPU over the run divided by the requests answered, in µs (null without /proc). */
type Result = { requestsPerSecond: number; p50: number; p99: number; non2xx: number; cpuPerRequest: number | null };
/**
 * `ratio` of requests a second and `cpuRatio` of workerd CPU a request (the baseline's over the
 * service's), each the rounds' median.
 */
type Comparison = { service: Result; baseline: Result; ratio: number; cpuRatio: number | null };
type Target = { name: string; url: string; serverToken: string; userToken?: string };

const work = await mkdtemp(join(tmpdir(), "acapi-bench-"));
let runtime: Miniflare | undefined;
try {
  const secrets = { TOKEN_SIGNING_KEYS: await generateSigningKeys(), DATA_PROTECTION_KEY: generateDataProtectionKey() };
  const serviceScript = await buildService(join(work, "service"));
  const baselineScript = await bundle("bench/baseline.ts", join(work, "baseline.js"));

  // Both workers run in one workerd process, each reached on its own socket.
  runtime = await startRuntime(
    join(work, "state"),
    serviceScript,
    secrets,
    [{ name: "baseline", scriptPath: baselineScript, bindings: { TOKEN_SIGNING_KEYS: secrets.TOKEN_SIGNING_KEYS } }],
    "production",
  );
  workerdCpu = workerdCpuReader();
  await seed(runtime, secrets.DATA_PROTECTION_KEY, [
    { ...demo.clients[0]!, ...BENCH_CLIENT, name: "Benchmark", rateLimit: { limit: 10_000_000, windowSeconds: 3600 } },
  ]);
  const targets: Target[] = [];
  for (const name of ["service", "baseline"]) {
    const url = await workerUrl(runtime, name);
    targets.push({ name, url, serverToken: await fetchToken(url) });
  }

  const [service, baseline] = targets as [Target, Target];
  // Tokens are the service's, signed with the same keys: the twin accepts them.
  const twin: Target = { ...service, name: DEVELOPMENT_TWIN, url: await workerUrl(runtime, DEVELOPMENT_TWIN) };

  console.log(
    `Load: ${SECONDS}s per route and worker in ${ROUNDS} alternating rounds, ${CONNECTIONS} connections, autocannon from Node.\n`,
  );
  // The connections rotate chains from this pool; each run (the warm-up and every round) ends with
  // up to one request in flight per connection, whose chain it takes along.
  const { refreshTokens, accessToken } = await signIns(service.url, 2 * (ROUNDS + 1) * CONNECTIONS);
  service.userToken = twin.userToken = accessToken;
  const rows: string[][] = [];
  for (const route of routes(refreshTokens)) {
    if (route.before) await route.before(service);
    const { service: s, baseline: b, ratio, cpuRatio } = await compare(service, baseline, route);
    const share = route.authenticated ? await durableObjectShare(twin, route) : "";
    rows.push([
      route.label,
      fmt(s.requestsPerSecond),
      `${s.p50} / ${s.p99}`,
      fmt(b.requestsPerSecond),
      `${b.p50} / ${b.p99}`,
      ratio.toFixed(2),
      cpuColumn(s, b, cpuRatio),
      share,
      s.non2xx + b.non2xx > 0 ? `non-2xx: ${s.non2xx}/${b.non2xx}` : "",
    ]);
  }
  printTable(
    [
      "route",
      "service req/s",
      "p50/p99 ms",
      "baseline req/s",
      "p50/p99 ms",
      "ratio",
      "CPU ratio (µs a request, medians)",
      "waited on the DO",
      "",
    ],
    rows,
  );

  const userRows: string[][] = [];
  const p50s = new Map<string, number[]>();
  for (const [size, from] of [
    [1_000, 0],
    [100_000, 1_000],
  ] as const) {
    const started = performance.now();
    await importBenchUsers(runtime, secrets.DATA_PROTECTION_KEY, from, size);
    console.log(
      `\nImported users ${fmt(from + 1)}-${fmt(size)} in ${((performance.now() - started) / 1000).toFixed(1)} s.`,
    );
    for (const route of userRoutes()) {
      const server = await serverTiming(twin, route);
      const { service: s, baseline: b, ratio, cpuRatio } = await compare(service, baseline, route);
      // The same load with a bookmark: every request reads D1, none the isolate's read cache.
      const bookmarked = {
        ...route,
        headers: (t: Target) => ({ ...route.headers(t), "x-d1-bookmark": lastBookmark! }),
      };
      const fromD1 = await load(service, bookmarked, SECONDS);
      p50s.set(route.label, [...(p50s.get(route.label) ?? []), server.p50]);
      userRows.push([
        route.label,
        fmt(size),
        fmt(s.requestsPerSecond),
        `${s.p50} / ${s.p99}`,
        ratio.toFixed(2),
        cpuColumn(s, b, cpuRatio),
        `${fmt(fromD1.requestsPerSecond)} (${(fromD1.requestsPerSecond / b.requestsPerSecond).toFixed(2)})`,
        server.p50.toFixed(2),
        server.rowsRead,
        await durableObjectShare(twin, route),
        s.non2xx + fromD1.non2xx > 0 ? `non-2xx: ${s.non2xx}/${fromD1.non2xx}` : "",
      ]);
    }
  }
  console.log("");
  printTable(
    [
      "route",
      "users",
      "service req/s",
      "p50/p99 ms",
      "ratio",
      "CPU ratio (µs a request, medians)",
      "req/s from D1 (ratio)",
      "p50 alone ms",
      "D1 rows read/request",
      "waited on the DO",
      "",
    ],
    userRows,
  );
  for (const [label, [small, large]] of p50s) {
    const change = ((large! / small! - 1) * 100).toFixed(0);
    console.log(
      `p50 one at a time, ${label}: ${small!.toFixed(2)} ms at 1,000 users, ${large!.toFixed(2)} ms at 100,000 (${change} %)`,
    );
  }

  const bundleBytes = await readFile(serviceScript);
  console.log(
    `\nBundle (wrangler deploy --dry-run --outdir): ${kib(bundleBytes.length)} KiB, gzip ${kib(gzipSync(bundleBytes).length)} KiB`,
  );
} finally {
  await runtime?.dispose();
  await rm(work, { recursive: true, force: true });
}

type Route = {
  label: string;
  method: "GET" | "POST";
  path: string;
  body?: string;
  headers: (t: Target) => Record<string, string>;
  /** Requests that change as the load runs, for the service (the baseline gets the fixed ones). */
  requests?: autocannon.Request[];
  /** Work before the route is loaded, outside the timed part. */
  before?: (service: Target) => Promise<void>;
  /** Admitted by the client's rate limiter: the bench reports how many calls waited on its Durable Object. */
  authenticated?: boolean;
};

function routes(refreshTokens: string[]): Route[] {
  const bearer = (t: Target) => ({ Authorization: `Bearer ${t.serverToken}` });
  return [
    { label: "GET /api/2/status", method: "GET", path: "/api/2/status", headers: () => ({}) },
    {
      label: "POST /oauth/token (client_credentials)",
      method: "POST",
      path: "/oauth/token",
      body: "grant_type=client_credentials",
      headers: () => ({ Authorization: BASIC, "Content-Type": "application/x-www-form-urlencoded" }),
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

/** Refresh tokens of the demo's first user for the benchmark client, from as many password sign-ins, and an access token. */
async function signIns(url: string, count: number): Promise<{ refreshTokens: string[]; accessToken: string }> {
  const user = demo.users[0]!;
  const tokens: string[] = [];
  let accessToken = "";
  for (let i = 0; i < count; i++) {
    const res = await fetch(`${url}/oauth/token`, {
      method: "POST",
      headers: { Authorization: BASIC, "Content-Type": FORM },
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

function userRoutes(): Route[] {
  const bearer = (t: Target) => ({ Authorization: `Bearer ${t.serverToken}` });
  return [
    {
      label: "GET /api/2/users?limit=100",
      method: "GET",
      path: "/api/2/users?limit=100",
      headers: bearer,
      authenticated: true,
    },
    {
      label: "GET /api/2/users?email=...",
      method: "GET",
      path: `/api/2/users?email=user${SEARCHED_USER}@bench.example`,
      headers: bearer,
      authenticated: true,
    },
    {
      label: "GET /api/2/user/{id}",
      method: "GET",
      path: `/api/2/user/${BENCH_USER_FIRST_ID + SEARCHED_USER}`,
      headers: bearer,
      authenticated: true,
    },
  ];
}

/**
 * The route over `samples` requests one at a time on the twin, each sent with a bookmark so that
 * it reads D1: the D1 rows one request reads (from the twin's Server-Timing header) and the median
 * round trip, timed to the microsecond here (the Worker's own clock moves in whole milliseconds).
 * One at a time, no request waits behind another, so the median compares data sets without the
 * load's queueing in it.
 */
async function serverTiming(twin: Target, route: Route, samples = 200) {
  if (lastBookmark === null) {
    // The twin's first list: read from D1, so it carries a bookmark.
    const list = await fetch(`${twin.url}/api/2/users?limit=1`, { headers: route.headers(twin) });
    await list.arrayBuffer();
    lastBookmark = list.headers.get("x-d1-bookmark");
    if (lastBookmark === null) throw new Error(`no x-d1-bookmark from the users list: ${list.status}`);
  }
  let rowsRead = "?";
  const roundTrips: number[] = [];
  for (let i = 0; i < samples; i++) {
    const started = performance.now();
    const res = await fetch(`${twin.url}${route.path}`, {
      method: route.method,
      headers: { ...route.headers(twin), "x-d1-bookmark": lastBookmark },
    });
    await res.arrayBuffer();
    roundTrips.push(performance.now() - started);
    lastBookmark = res.headers.get("x-d1-bookmark") ?? lastBookmark;
    const d1 = /(\d+) queries, (\d+) rows read/.exec(res.headers.get("Server-Timing") ?? "");
    if (d1) rowsRead = `${d1[2]} (${d1[1]} queries)`;
  }
  return { rowsRead, p50: median(roundTrips) };
}

/**
 * The share of the route's calls that waited on the client's Durable Object, under the same load
 * for two seconds, from the twin's Server-Timing header (`do;...;desc="N calls"` or `"1 call"`). Not timed:
 * reading every response's headers costs the load generator.
 */
async function durableObjectShare(twin: Target, route: Route): Promise<string> {
  let waited = 0;
  let answered = 0;
  let unmeasured = 0;
  await autocannon({
    url: `${twin.url}${route.path}`,
    method: route.method,
    headers: route.headers(twin),
    connections: CONNECTIONS,
    duration: 2,
    requests: [
      {
        onResponse: (_status, _body, _context, headers) => {
          answered += 1;
          // autocannon keeps the names as sent (`Server-Timing`).
          const timing = Object.entries(headers ?? {}).find(([name]) => name.toLowerCase() === "server-timing")?.[1];
          const calls = /do;dur=[\d.]+;desc="(\d+) calls?"/.exec(String(timing ?? ""))?.[1];
          if (calls === undefined) unmeasured += 1;
          else if (Number(calls) > 0) waited += 1;
        },
      },
    ],
  });
  if (unmeasured > 0) throw new Error(`${route.label}: ${fmt(unmeasured)} answers without a Durable Object figure`);
  return `${fmt(waited)} of ${fmt(answered)} (${((100 * waited) / Math.max(answered, 1)).toFixed(2)} %)`;
}

/** Generated users `from + 1` to `to`, connected to the benchmark client, imported in batches. */
async function importBenchUsers(mf: Miniflare, dataProtectionKey: string, from: number, to: number) {
  const givenNames = ["Ingrid", "Erik", "Kari", "Ola", "Åse", "Nils", "Sofie", "Jonas"];
  const familyNames = ["Hansen", "Johansen", "Olsen", "Larsen", "Andersen", "Pedersen", "Nilsen", "Kristiansen"];
  const BATCH = 1_000;
  for (let start = from + 1; start <= to; start += BATCH) {
    const users = [];
    for (let n = start; n < Math.min(start + BATCH, to + 1); n++) {
      users.push({
        userId: String(BENCH_USER_FIRST_ID + n),
        uuid: `00000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}`,
        status: n % 10 === 0 ? 0 : n % 97 === 0 ? -1 : 1,
        email: `user${n}@bench.example`,
        name: { givenName: givenNames[n % givenNames.length], familyName: familyNames[(n >> 3) % familyNames.length] },
        published: 1_600_000_000 + n * 60,
        updated: 1_700_000_000 + n * 60,
        clients: [BENCH_CLIENT.id],
      });
    }
    // One script a batch: through Miniflare's proxy each prepared statement would be a round trip.
    await importScript(mf, { users }, dataProtectionKey);
  }
}

/**
 * The route on the service and on the baseline: one second of warm-up on each (isolate start, key
 * import, caches), then ROUNDS rounds of SECONDS / ROUNDS on each in turn. Requests/s over all
 * rounds; p50, p99 and the ratio are the rounds' medians.
 */
async function compare(service: Target, baseline: Target, route: Route): Promise<Comparison> {
  for (const target of [service, baseline]) await load(target, route, 1);
  const rounds: [Result, Result][] = [];
  for (let round = 0; round < ROUNDS; round++) {
    rounds.push([await load(service, route, SECONDS / ROUNDS), await load(baseline, route, SECONDS / ROUNDS)]);
  }
  const summary = (results: Result[]): Result => ({
    requestsPerSecond: results.reduce((sum, r) => sum + r.requestsPerSecond, 0) / results.length,
    p50: median(results.map((r) => r.p50)),
    p99: median(results.map((r) => r.p99)),
    non2xx: results.reduce((sum, r) => sum + r.non2xx, 0),
    cpuPerRequest: results.some((r) => r.cpuPerRequest === null) ? null : median(results.map((r) => r.cpuPerRequest!)),
  });
  return {
    service: summary(rounds.map(([s]) => s)),
    baseline: summary(rounds.map(([, b]) => b)),
    ratio: median(rounds.map(([s, b]) => s.requestsPerSecond / b.requestsPerSecond)),
    cpuRatio: rounds.some(([s, b]) => s.cpuPerRequest === null || b.cpuPerRequest === null)
      ? null
      : median(rounds.map(([s, b]) => b.cpuPerRequest! / s.cpuPerRequest!)),
  };
}

async function load(target: Target, route: Route, seconds: number): Promise<Result> {
  const cpuBefore = workerdCpu?.();
  const result = await autocannon({
    url: `${target.url}${route.path}`,
    method: route.method,
    headers: route.headers(target),
    body: route.body,
    connections: CONNECTIONS,
    duration: seconds,
    ...(route.requests && target.name !== "baseline" && { requests: route.requests }),
  });
  return {
    requestsPerSecond: result.requests.total / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    cpuPerRequest:
      cpuBefore === undefined || result.requests.total === 0
        ? null
        : (workerdCpu!() - cpuBefore) / result.requests.total,
  };
}

/**
 * The CPU ratio (the rounds' median) with each worker's µs a request beside it (service /
 * baseline, each its own median over the rounds, so they need not divide to the ratio exactly);
 * "-" without /proc.
 */
function cpuColumn(service: Result, baseline: Result, cpuRatio: number | null): string {
  if (cpuRatio === null || service.cpuPerRequest === null || baseline.cpuPerRequest === null) return "-";
  return `${cpuRatio.toFixed(2)} (${service.cpuPerRequest.toFixed(0)} / ${baseline.cpuPerRequest.toFixed(0)})`;
}

function median(values: number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
}

async function fetchToken(url: string): Promise<string> {
  const res = await fetch(`${url}/oauth/token`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "client_credentials",
      client_id: BENCH_CLIENT.id,
      client_secret: BENCH_CLIENT.secret,
    }),
  });
  if (!res.ok) throw new Error(`token for the benchmark: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { access_token: string }).access_token;
}

function kib(bytes: number): string {
  return (bytes / 1024).toFixed(1);
}
