/**
 * npm run bench:load: BENCH_LOAD_SECONDS (default 60) of mixed traffic over BENCH_CONNECTIONS
 * (default 4) connections, at whatever rate the machine sustains, against the exact bundle
 * `wrangler deploy` would upload, started in local workerd through Miniflare as `npm run bench`
 * starts it (real local D1, KV and Durable Objects). All kinds run at once, interleaved on every
 * connection: client_credentials tokens, API reads (/clients, /me, /users), device registrations
 * and password grants, one in five with a wrong password, for three load clients: one with a quota
 * no run exhausts, one of 300 calls an hour (gone in the first seconds) and one of 2,000 (gone
 * within a 60 s run). Then it checks what must hold under any load:
 *   1. no 5xx, every request answered, and every answer one its request can get;
 *   2. every device registration that got 201 reads back from D1, for its user and client, and
 *      no other was stored;
 *   3. each client's admitted calls (2xx) equal what its Durable Object counted, and never exceed
 *      its quota;
 *   4. the password throttle counted every wrong password, per account, and kept no count for a
 *      right one.
 * It prints the figures and exits non-zero if a check fails. Everything it starts is stopped and
 * its state deleted before it exits.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import autocannon from "autocannon";
import type { Miniflare } from "miniflare";
import { hashPassword } from "../src/security/password";
import { buildService, fmt, importScript, printTable, seed, startRuntime, workerUrl } from "./lib/bench-runtime";
import { generateDataProtectionKey, generateSigningKeys } from "./lib/keys";
import { readRateLimiterState, type RateLimiterState } from "./lib/rate-limiter-state";

const SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 60);
/**
 * Four keep workerd's one thread as busy as ten do (the same requests a second here), with far
 * less waiting in its sockets: at ten, requests wait seconds to be read, and one unread for 5 s is
 * dropped with its connection (README "Mixed load").
 */
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 4);
/** src/durable-objects/rate-limiter.ts's LEASE_MS (that module imports cloudflare:workers, so it is not imported here). */
const LEASE_MS = 5_000;
/**
 * Failed password sign-ins an account may have before it is held (from one network, at 5). All
 * of the load comes from one network, which the token endpoint holds after 300 failures in 15
 * minutes: a run of more than about two minutes would see wrong passwords refused with 420.
 */
const MAX_WRONG_PER_ACCOUNT = 4;
const FORM = "application/x-www-form-urlencoded";
const REDIRECT_URI = "https://load.example/callback";
const PASSWORD = "load-test-password-right";
const WRONG_PASSWORD = "load-test-password-wrong";
const FIRST_USER_ID = 200_000;
/** Users signing in with the right password; the first of them also hold the user tokens. */
const RIGHT_USERS = 40;
const TOKEN_USERS_PER_CLIENT = 5;
/** Users that only ever get wrong passwords, at most MAX_WRONG_PER_ACCOUNT each. */
const WRONG_USERS = Math.max(200, SECONDS * 10);
const PLATFORMS = ["iPhone", "iPad", "Android"] as const;

type ClientSpec = { id: string; secret: string; name: string; quota: number };
type LoadClient = ClientSpec & {
  basic: string;
  serverToken: string;
  userTokens: { userId: number; token: string }[];
  sent: number;
  admitted: number;
  refused: number;
};

/** One client the load cannot exhaust, two it does (per 3,600 s window). */
const CLIENT_SPECS: ClientSpec[] = [
  { id: "loadbig00000000000000000", secret: "load-client-secret-big-0000", name: "Load: big quota", quota: 10_000_000 },
  { id: "load2000000000000000000", secret: "load-client-secret-2000-000", name: "Load: 2,000 an hour", quota: 2_000 },
  { id: "load300000000000000000", secret: "load-client-secret-300-0000", name: "Load: 300 an hour", quota: 300 },
];

type Kind = "token" | "clients" | "me" | "users" | "devices" | "password" | "password, wrong";
const KINDS: Kind[] = ["token", "clients", "me", "users", "devices", "password", "password, wrong"];
const API_KINDS = new Set<Kind>(["clients", "me", "users", "devices"]);
/**
 * Per 20 requests. A password grant costs the Worker a PBKDF2 of 100,000 iterations (tens of ms
 * of CPU on this machine, during which its isolate serves nothing else), so it is one request in
 * 20; one password grant in five has a wrong password.
 */
const WEIGHTS: [Kind | "password grant", number][] = [
  ["token", 4],
  ["clients", 4],
  ["me", 4],
  ["devices", 4],
  ["users", 3],
  ["password grant", 1],
];
/** API calls go to the big client twice as often as to each limited one. */
const API_CLIENT_ORDER = [0, 1, 0, 2];

type Item = {
  kind: Kind | "drain";
  client: LoadClient | null;
  method: "GET" | "POST";
  path: string;
  headers: Record<string, string>;
  body?: string;
  userId?: number;
  /** For a wrong password: the throttle's account in the client's object. */
  account?: string;
};
type KindStats = { sent: number; statuses: Map<number, number>; latencies: number[]; unexpected: string[] };

const work = await mkdtemp(join(tmpdir(), "acapi-bench-load-"));
const statePath = join(work, "state");
let runtime: Miniflare | undefined;
let failed = false;
try {
  const secrets = { TOKEN_SIGNING_KEYS: await generateSigningKeys(), DATA_PROTECTION_KEY: generateDataProtectionKey() };
  const serviceScript = await buildService(join(work, "service"));
  runtime = await startRuntime(statePath, serviceScript, secrets);
  const setupStarted = performance.now();
  await seed(
    runtime,
    secrets.DATA_PROTECTION_KEY,
    CLIENT_SPECS.map((spec) => ({
      id: spec.id,
      secret: spec.secret,
      name: spec.name,
      merchantId: 10,
      redirectUris: [REDIRECT_URI],
      defaultRedirectUri: REDIRECT_URI,
      grantTypes: ["client_credentials", "password"],
      rateLimit: { limit: spec.quota, windowSeconds: 3600 },
    })),
  );
  await importLoadUsers(runtime, secrets.DATA_PROTECTION_KEY);
  const url = await workerUrl(runtime, "service");
  const clients: LoadClient[] = [];
  for (const [index, spec] of CLIENT_SPECS.entries()) {
    const basic = `Basic ${Buffer.from(`${spec.id}:${spec.secret}`).toString("base64")}`;
    const client: LoadClient = {
      ...spec,
      basic,
      serverToken: "",
      userTokens: [],
      sent: 0,
      admitted: 0,
      refused: 0,
    };
    client.serverToken = (await token(url, basic, { grant_type: "client_credentials" })).access_token;
    for (let i = 0; i < TOKEN_USERS_PER_CLIENT; i++) {
      const userId = FIRST_USER_ID + index * TOKEN_USERS_PER_CLIENT + i;
      const answer = await token(url, basic, {
        grant_type: "password",
        username: email(userId),
        password: PASSWORD,
        redirect_uri: REDIRECT_URI,
      });
      client.userTokens.push({ userId, token: answer.access_token });
    }
    clients.push(client);
  }
  console.log(
    `Set up in ${((performance.now() - setupStarted) / 1000).toFixed(1)} s: ${clients.length} load clients ` +
      `(quotas ${clients.map((c) => fmt(c.quota)).join(", ")} per 3,600 s), ${RIGHT_USERS} users signing in ` +
      `with the right password, ${fmt(WRONG_USERS)} with wrong ones (at most ${MAX_WRONG_PER_ACCOUNT} each).`,
  );

  // ---- The load -------------------------------------------------------------------------------
  const pattern = interleave(WEIGHTS);
  const stats = new Map<Kind, KindStats>(
    KINDS.map((kind) => [kind, { sent: 0, statuses: new Map(), latencies: [], unexpected: [] }]),
  );
  const devices: { hash: string; userId: number; clientId: string }[] = [];
  /** Wrong passwords sent, by `<client id> <account>`. */
  const wrongSent = new Map<string, number>();
  let sequence = 0;
  let passwordGrants = 0;
  let wrongPasswords = 0;
  let wrongPoolExhausted = 0;
  let deviceCount = 0;
  let draining = false;
  let inFlight = 0;
  /** The contexts of the load's requests sent and not yet answered. */
  const pending = new Set<object>();
  const counters = new Map<string, number>();
  const next = (key: string) => {
    const n = counters.get(key) ?? 0;
    counters.set(key, n + 1);
    return n;
  };

  const nextItem = (): Item => {
    if (draining) return { kind: "drain", client: null, method: "GET", path: "/api/2/status", headers: {} };
    const slot = pattern[sequence++ % pattern.length]!;
    if (slot === "token") {
      const client = clients[next("token") % clients.length]!;
      return {
        kind: "token",
        client,
        method: "POST",
        path: "/oauth/token",
        headers: { Authorization: client.basic, "Content-Type": FORM },
        body: "grant_type=client_credentials",
      };
    }
    if (slot === "password grant") {
      const n = passwordGrants++;
      let wrongIndex = n % 5 === 4 ? wrongPasswords : -1;
      if (wrongIndex >= WRONG_USERS * MAX_WRONG_PER_ACCOUNT) {
        wrongPoolExhausted += 1;
        wrongIndex = -1;
      }
      if (wrongIndex >= 0) {
        wrongPasswords += 1;
        const user = Math.floor(wrongIndex / MAX_WRONG_PER_ACCOUNT);
        const userId = FIRST_USER_ID + RIGHT_USERS + user;
        // Every wrong password of an account goes to the same client: the throttle counts per client.
        const client = clients[user % clients.length]!;
        const account = `user:${userId}`;
        return passwordItem("password, wrong", client, userId, WRONG_PASSWORD, account);
      }
      const client = clients[next("password") % clients.length]!;
      const userId = FIRST_USER_ID + (next("right user") % RIGHT_USERS);
      return passwordItem("password", client, userId, PASSWORD);
    }
    const client = clients[API_CLIENT_ORDER[next(`api ${slot}`) % API_CLIENT_ORDER.length]!]!;
    const server = { Authorization: `Bearer ${client.serverToken}` };
    if (slot === "clients") return { kind: slot, client, method: "GET", path: "/api/2/clients", headers: server };
    if (slot === "users") return { kind: slot, client, method: "GET", path: "/api/2/users?limit=10", headers: server };
    const user = client.userTokens[next(`user ${client.id}`) % client.userTokens.length]!;
    const bearer = { Authorization: `Bearer ${user.token}` };
    if (slot === "me")
      return { kind: slot, client, method: "GET", path: "/api/2/me", headers: bearer, userId: user.userId };
    const n = deviceCount++;
    return {
      kind: "devices",
      client,
      method: "POST",
      path: "/api/2/devices",
      headers: { ...bearer, "Content-Type": FORM },
      body: new URLSearchParams({
        deviceId: `load-device-${n}`,
        platform: PLATFORMS[n % PLATFORMS.length]!,
        applicationName: "Load test",
      }).toString(),
      userId: user.userId,
    };
  };

  const setupRequest = (request: autocannon.Request, context: object): autocannon.Request => {
    const item = nextItem();
    Object.assign(context, { item, started: performance.now() });
    if (item.kind !== "drain") {
      inFlight += 1;
      pending.add(context);
      stats.get(item.kind)!.sent += 1;
      if (item.client && API_KINDS.has(item.kind)) item.client.sent += 1;
      if (item.account) {
        const key = `${item.client!.id} ${item.account}`;
        wrongSent.set(key, (wrongSent.get(key) ?? 0) + 1);
      }
    }
    return { ...request, method: item.method, path: item.path, headers: item.headers, body: item.body ?? "" };
  };

  let lastAnswer = 0;
  const onResponse = (status: number, body: string, context: object) => {
    const { item, started } = context as { item: Item; started: number };
    if (item.kind === "drain") return;
    const now = performance.now();
    inFlight -= 1;
    pending.delete(context);
    lastAnswer = now;
    const kindStats = stats.get(item.kind)!;
    kindStats.statuses.set(status, (kindStats.statuses.get(status) ?? 0) + 1);
    kindStats.latencies.push(now - started);
    const unexpected = () => {
      if (kindStats.unexpected.length < 5) kindStats.unexpected.push(`${status} ${body.slice(0, 200)}`);
      else kindStats.unexpected.push("");
    };
    if (API_KINDS.has(item.kind)) {
      const client = item.client!;
      if (status >= 200 && status < 300) client.admitted += 1;
      else if (status === 420) client.refused += 1;
      else unexpected();
      if (item.kind === "devices" && status === 201) {
        const hash = (JSON.parse(body) as { data?: { hash?: string } }).data?.hash;
        if (typeof hash === "string") devices.push({ hash, userId: item.userId!, clientId: client.id });
        else unexpected();
      }
    } else if (item.kind === "password, wrong") {
      if (status !== 400 || !body.includes('"error":"invalid_grant"')) unexpected();
    } else if (status !== 200) {
      unexpected();
    }
  };

  console.log(`\nLoad: ${SECONDS} s of mixed traffic, ${CONNECTIONS} connections, autocannon from Node.`);
  const loadStarted = performance.now();
  const stalls = watchStalls(url);
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url,
        connections: CONNECTIONS,
        // Stopped by hand below, once every request of the load has been answered.
        duration: SECONDS + 3600,
        requests: [{ setupRequest, onResponse }],
      },
      (error, answer) => (error ? reject(error) : resolve(answer)),
    );
    void (async () => {
      await sleep(SECONDS * 1000);
      // From now on the connections ask only for the status, which nothing counts, so that no
      // request of the load is left unanswered when autocannon stops (it drops what is in flight).
      draining = true;
      const drainStarted = performance.now();
      while (inFlight > 0 && performance.now() - drainStarted < 30_000) await sleep(10);
      instance.stop();
    })();
  });
  const elapsed = (lastAnswer - loadStarted) / 1000;
  const lost = inFlight;
  const stall = await stalls.stop();

  // ---- After the load -------------------------------------------------------------------------
  // Every lease of the load has run out after LEASE_MS; the next call for each client hands back
  // the slots its isolate did not use (and takes a lease of its own, with one used slot).
  await sleep(LEASE_MS + 1_000);
  const finalCalls = new Map<string, number>();
  for (const client of clients) {
    const res = await fetch(`${url}/api/2/clients`, { headers: { Authorization: `Bearer ${client.serverToken}` } });
    await res.arrayBuffer();
    finalCalls.set(client.id, res.status);
    client.sent += 1;
    if (res.ok) client.admitted += 1;
    else if (res.status === 420) client.refused += 1;
  }
  await sleep(1_000); // releases of further leases are sent after the response (waitUntil)

  const d1 = await runtime.getD1Database("DB", "service");
  const stored = await d1
    .prepare(
      "SELECT hash, user_id AS userId, client_id AS clientId FROM device_fingerprints WHERE client_id IN (?, ?, ?)",
    )
    .bind(...clients.map((client) => client.id))
    .all<{ hash: string; userId: number; clientId: string }>();
  const namespace = await runtime.getDurableObjectNamespace("RATE_LIMITER", "service");
  const objectIds = new Map(clients.map((client) => [client.id, namespace.idFromName(client.id).toString()]));
  await runtime.dispose();
  runtime = undefined;
  const states = new Map<string, RateLimiterState>();
  for (const client of clients) states.set(client.id, await readRateLimiterState(statePath, objectIds.get(client.id)!));

  // ---- Figures --------------------------------------------------------------------------------
  const answered = [...stats.values()].reduce((sum, s) => sum + s.latencies.length, 0);
  console.log(
    `\n${fmt(answered)} requests answered in ${elapsed.toFixed(1)} s: ${fmt(answered / elapsed)} req/s ` +
      `(autocannon: ${fmt(result.errors)} errors, ${fmt(result.timeouts)} timeouts; ${fmt(lost)} unanswered).\n`,
  );
  printTable(
    ["kind", "requests", "req/s", "p50 ms", "p99 ms", "statuses"],
    KINDS.map((kind) => {
      const s = stats.get(kind)!;
      const sorted = [...s.latencies].sort((a, b) => a - b);
      return [
        kindLabel(kind),
        fmt(s.latencies.length),
        fmt(s.latencies.length / elapsed),
        percentile(sorted, 0.5),
        percentile(sorted, 0.99),
        [...s.statuses]
          .sort(([a], [b]) => a - b)
          .map(([status, count]) => `${status}: ${fmt(count)}`)
          .join(", "),
      ];
    }),
  );

  const checks: { name: string; ok: boolean; detail: string }[] = [];

  console.log(
    `\nLongest wait for GET /api/2/status on a connection of its own, every 100 ms during the load: ` +
      `${fmt(stall.probeMs)} ms at ${stall.probeAt.toFixed(1)} s (${stall.slowProbes} over 1 s); ` +
      `longest delay of this Node process's event loop: ${fmt(stall.nodeMs)} ms.`,
  );

  // 1. No 5xx; every request answered; every answer one its request can get.
  const statuses = new Map<number, number>();
  for (const s of stats.values())
    for (const [status, count] of s.statuses) statuses.set(status, (statuses.get(status) ?? 0) + count);
  const fiveXx = [...statuses].filter(([status]) => status >= 500).reduce((sum, [, count]) => sum + count, 0);
  checks.push({ name: "no 5xx", ok: fiveXx === 0, detail: `${fmt(fiveXx)} 5xx of ${fmt(answered)}` });
  const sent = [...stats.values()].reduce((sum, s) => sum + s.sent, 0);
  const unanswered = [...pending].map((context) => {
    const { item, started } = context as { item: Item; started: number };
    return `${item.method} ${item.path} (${item.client?.name}) sent at ${((started - loadStarted) / 1000).toFixed(2)} s`;
  });
  checks.push({
    name: "every request answered",
    ok: lost === 0 && answered === sent && result.errors === 0,
    detail:
      `${fmt(answered)} of ${fmt(sent)} answered, ${fmt(result.errors)} connection errors or timeouts` +
      (unanswered.length > 0 ? `; never answered: ${unanswered.join("; ")}` : ""),
  });
  const unexpected = [...stats].filter(([, s]) => s.unexpected.length > 0);
  checks.push({
    name: "every answer expected",
    ok: unexpected.length === 0,
    detail:
      unexpected.length === 0
        ? "tokens 200, API calls 2xx or 420, right passwords 200, wrong ones 400 invalid_grant"
        : unexpected
            .map(([kind, s]) => `${kind}: ${s.unexpected.length} (${s.unexpected.filter(Boolean).join(" | ")})`)
            .join("; "),
  });

  // 2. Every device registration that got 201 reads back, for its user and client.
  const rows = new Set(stored.results.map((row) => `${row.hash} ${row.userId} ${row.clientId}`));
  const missing = devices.filter((device) => !rows.has(`${device.hash} ${device.userId} ${device.clientId}`));
  checks.push({
    name: "device registrations read back",
    ok: missing.length === 0 && devices.length > 0 && stored.results.length === devices.length,
    detail: `${fmt(devices.length - missing.length)} of ${fmt(devices.length)} registrations (201) found in D1 for their user and client; ${fmt(stored.results.length)} rows stored`,
  });

  // 3. Admitted calls per client: as the Durable Object counted them, never over the quota.
  console.log("");
  const clientRows: string[][] = [];
  for (const client of clients) {
    const window = states.get(client.id)!.window;
    const leases = Object.values(window?.leases ?? {});
    // Each lease still held was taken by the final call, which used one of its slots.
    const finalStatus = finalCalls.get(client.id) ?? 0;
    const finalAdmitted = finalStatus >= 200 && finalStatus < 300;
    const leasesKnown = leases.length === 0 || (leases.length === 1 && finalAdmitted);
    const counted = window ? window.count - leases.reduce((sum, slots) => sum + slots - 1, 0) : 0;
    const ok =
      leasesKnown &&
      client.admitted === counted &&
      client.admitted <= client.quota &&
      (window?.count ?? 0) <= client.quota;
    clientRows.push([
      client.name,
      fmt(client.sent),
      fmt(client.admitted),
      fmt(client.refused),
      `${fmt(counted)} (count ${fmt(window?.count ?? 0)}, ${leases.length} lease${leases.length === 1 ? "" : "s"} held)`,
      fmt(client.quota),
      client.refused > 0 ? "yes" : "no",
    ]);
    checks.push({
      name: `admitted = Durable Object's count <= quota (${client.name})`,
      ok,
      detail: `${fmt(client.admitted)} admitted, ${fmt(counted)} counted, quota ${fmt(client.quota)}${leasesKnown ? "" : `; leases held whose use is unknown: ${leases.join(", ")}`}`,
    });
  }
  printTable(
    ["client", "API calls", "admitted (2xx)", "refused (420)", "Durable Object counted", "quota", "quota reached"],
    clientRows,
  );
  // The bound is only tested where the load reached it.
  const exhausted = clients.filter((client) => client.refused > 0);
  checks.push({
    name: "a quota was reached",
    ok: exhausted.length > 0,
    detail: `${exhausted.map((client) => client.name).join(", ") || "none"} refused calls (420)`,
  });

  // 4. The throttle counted every wrong password, per account, and no right one.
  const wrongAccounts = [...wrongSent];
  const miscounted = wrongAccounts.filter(([key, count]) => {
    const [clientId, account] = key.split(" ") as [string, string];
    return states.get(clientId)!.passwordFailures.get(account)?.count !== count;
  });
  const wrongAccountKeys = new Set(wrongAccounts.map(([key]) => key));
  const strayCounts = clients.flatMap((client) =>
    [...states.get(client.id)!.passwordFailures.keys()]
      .filter((account) => !wrongAccountKeys.has(`${client.id} ${account}`))
      .map((account) => `${client.name}: ${account}`),
  );
  const wrongTotal = wrongAccounts.reduce((sum, [, count]) => sum + count, 0);
  checks.push({
    name: "throttle counted every wrong password",
    ok: miscounted.length === 0 && wrongTotal > 0,
    detail:
      `${fmt(wrongTotal)} wrong passwords to ${fmt(wrongAccounts.length)} accounts, ` +
      `${fmt(wrongAccounts.length - miscounted.length)} counted exactly` +
      (miscounted.length > 0
        ? ` (differ: ${miscounted
            .slice(0, 5)
            .map(
              ([key, count]) =>
                `${key} sent ${count}, counted ${states.get(key.split(" ")[0]!)!.passwordFailures.get(key.split(" ")[1]!)?.count ?? 0}`,
            )
            .join("; ")})`
        : ""),
  });
  checks.push({
    name: "no count left for a right password",
    ok: strayCounts.length === 0,
    detail: strayCounts.length === 0 ? "no other account has a count" : strayCounts.slice(0, 5).join("; "),
  });
  if (wrongPoolExhausted > 0) {
    console.log(
      `\nNote: ${fmt(wrongPoolExhausted)} wrong passwords were sent as right ones: the wrong-password users ran out.`,
    );
  }

  console.log("");
  for (const check of checks) console.log(`${check.ok ? "PASS" : "FAIL"}  ${check.name}: ${check.detail}`);
  failed = checks.some((check) => !check.ok);
} catch (error) {
  failed = true;
  console.error(error);
} finally {
  await runtime?.dispose();
  await rm(work, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);

/**
 * Watches for stalls while the load runs: the round trip of GET /api/2/status (counted nowhere)
 * on a connection of its own every 100 ms, and this process's event-loop delay. workerd serves
 * the Worker, D1 and the Durable Objects on one thread: a stall of 5 s there makes its HTTP
 * server close the connections whose next request it has not read yet (kj's pipeline timeout),
 * and those requests are never answered; these figures tell such a stall from the Worker's own
 * failures.
 */
function watchStalls(url: string) {
  const loop = monitorEventLoopDelay({ resolution: 20 });
  loop.enable();
  const started = performance.now();
  let running = true;
  let probeMs = 0;
  let probeAt = 0;
  let slowProbes = 0;
  const probing = (async () => {
    while (running) {
      const sent = performance.now();
      try {
        await (await fetch(`${url}/api/2/status`)).arrayBuffer();
      } catch {
        // A failed probe is as slow as its wait.
      }
      const ms = performance.now() - sent;
      if (ms > 1_000) slowProbes += 1;
      if (ms > probeMs) [probeMs, probeAt] = [ms, (sent - started) / 1000];
      await sleep(100);
    }
  })();
  return {
    async stop() {
      running = false;
      await probing;
      loop.disable();
      return { probeMs, probeAt, slowProbes, nodeMs: loop.max / 1e6 };
    },
  };
}

function passwordItem(kind: Kind, client: LoadClient, userId: number, password: string, account?: string): Item {
  return {
    kind,
    client,
    method: "POST",
    path: "/oauth/token",
    headers: { Authorization: client.basic, "Content-Type": FORM },
    body: new URLSearchParams({
      grant_type: "password",
      username: email(userId),
      password,
      redirect_uri: REDIRECT_URI,
    }).toString(),
    userId,
    ...(account && { account }),
  };
}

function email(userId: number): string {
  return `load${userId}@load.example`;
}

/**
 * The generated users, connected to every load client, imported without a password (the import
 * format hashes each one, PBKDF2 with 100,000 iterations), then given one hash of PASSWORD: the
 * Worker's check of it costs what it costs for any user.
 */
async function importLoadUsers(mf: Miniflare, dataProtectionKey: string): Promise<void> {
  const users = [];
  for (let n = 0; n < RIGHT_USERS + WRONG_USERS; n++) {
    const userId = FIRST_USER_ID + n;
    users.push({
      userId: String(userId),
      uuid: `00000000-0000-4000-9000-${userId.toString(16).padStart(12, "0")}`,
      status: 1,
      email: email(userId),
      name: { givenName: "Load", familyName: `User ${n}` },
      published: 1_700_000_000,
      updated: 1_700_000_000,
      clients: CLIENT_SPECS.map((spec) => spec.id),
    });
  }
  await importScript(mf, { users }, dataProtectionKey);
  const d1 = await mf.getD1Database("DB", "service");
  await d1
    .prepare("UPDATE users SET password_hash = ? WHERE id BETWEEN ? AND ?")
    .bind(await hashPassword(PASSWORD), FIRST_USER_ID, FIRST_USER_ID + RIGHT_USERS + WRONG_USERS - 1)
    .run();
}

async function token(url: string, basic: string, params: Record<string, string>) {
  const res = await fetch(`${url}/oauth/token`, {
    method: "POST",
    headers: { Authorization: basic, "Content-Type": FORM },
    body: new URLSearchParams(params),
  });
  if (!res.ok) throw new Error(`${params.grant_type} for the load: ${res.status} ${await res.text()}`);
  return (await res.json()) as { access_token: string };
}

/** The kinds in proportion to their weights, spread evenly (smooth weighted round robin). */
function interleave<T>(weights: [T, number][]): T[] {
  const total = weights.reduce((sum, [, weight]) => sum + weight, 0);
  const current = weights.map(() => 0);
  const order: T[] = [];
  for (let i = 0; i < total; i++) {
    let best = 0;
    for (let k = 0; k < weights.length; k++) {
      current[k]! += weights[k]![1];
      if (current[k]! > current[best]!) best = k;
    }
    current[best]! -= total;
    order.push(weights[best]![0]);
  }
  return order;
}

function percentile(sorted: number[], p: number): string {
  if (sorted.length === 0) return "-";
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!.toFixed(1);
}

function kindLabel(kind: Kind): string {
  return {
    token: "POST /oauth/token client_credentials",
    clients: "GET /api/2/clients (server token)",
    me: "GET /api/2/me (user token)",
    users: "GET /api/2/users?limit=10 (server token)",
    devices: "POST /api/2/devices (user token)",
    password: "POST /oauth/token password",
    "password, wrong": "POST /oauth/token password, wrong one",
  }[kind];
}
