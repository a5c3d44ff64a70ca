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
 * BENCH_SECONDS (default 5) and BENCH_CONNECTIONS (default 10) bound the load; BENCH_ROUTES
 * (comma-separated words, such as `refresh,status`) loads only the routes whose label has one of
 * them, and the user searches only when one of them is `users`. `npm run bench -- --geography`
 * instead times the sign-in flows as callers in Oslo, Virginia and Sydney meet them
 * (lib/bench/geography.ts). Everything it starts is stopped before it exits.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Miniflare } from "miniflare";
import { benchGeography } from "./lib/bench/geography";
import { LoadMeter } from "./lib/bench/measure";
import { CONNECTIONS, ROUNDS, ROUTE_FILTER, SECONDS } from "./lib/bench/plan";
import { printBundleSize, printRouteTable, printUserSearchTable } from "./lib/bench/report";
import { benchRoutes } from "./lib/bench/routes";
import { benchUserSearch } from "./lib/bench/user-search";
import { prepareTargets, startWorkers } from "./lib/bench/workers";
import { workerdCpuReader } from "./lib/bench-runtime";
import { generateDataProtectionKey, generateSigningKeys } from "./lib/keys";

const work = await mkdtemp(join(tmpdir(), "acapi-bench-"));
let runtime: Miniflare | undefined;
try {
  const secrets = { TOKEN_SIGNING_KEYS: await generateSigningKeys(), DATA_PROTECTION_KEY: generateDataProtectionKey() };
  if (process.argv.includes("--geography")) {
    await benchGeography(work, secrets);
    process.exit(0);
  }
  const started = await startWorkers(work, secrets);
  runtime = started.runtime;
  const meter = new LoadMeter(workerdCpuReader());
  const targets = await prepareTargets(runtime, secrets.DATA_PROTECTION_KEY);

  console.log(
    `Load: ${SECONDS}s per route and worker in ${ROUNDS} alternating rounds, ${CONNECTIONS} connections, autocannon from Node.\n`,
  );
  printRouteTable(await benchRoutes(meter, targets));
  if (ROUTE_FILTER.length === 0 || ROUTE_FILTER.includes("users")) {
    printUserSearchTable(await benchUserSearch(runtime, secrets.DATA_PROTECTION_KEY, meter, targets));
  }
  await printBundleSize(started.serviceScript);
} finally {
  await runtime?.dispose();
  await rm(work, { recursive: true, force: true });
}
