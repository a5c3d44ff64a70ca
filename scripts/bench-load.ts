/**
 * npm run bench:load: BENCH_LOAD_SECONDS (default 60) of mixed traffic over BENCH_CONNECTIONS
 * (default 4) connections, at whatever rate the machine sustains, against the exact bundle
 * `wrangler deploy` would upload, started in local workerd through Miniflare as `npm run bench`
 * starts it (real local D1, KV and Durable Objects), split as staging and production deploy it:
 * the edge Worker passes the password grants to its sign-in Worker. All kinds run at once, interleaved on every
 * connection: client_credentials tokens, API reads (/clients, /me, /users), device registrations
 * and password grants, one in five with a wrong password, for three load clients: one with a quota
 * no run exhausts, one of 300 calls an hour (gone in the first seconds) and one of 2,000 (gone
 * within a 60 s run). Then it checks what must hold under any load (scripts/lib/bench-load/checks.ts),
 * prints the figures and exits non-zero if a check fails. Everything it starts is stopped and its
 * state deleted before it exits.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Miniflare } from "miniflare";
import { buildService, startRuntime } from "./lib/bench-runtime";
import {
  answerChecks,
  type Check,
  countsByDurableObject,
  deviceCheck,
  quotaChecks,
  throttleChecks,
} from "./lib/bench-load/checks";
import { runLoad } from "./lib/bench-load/load";
import { CONNECTIONS, SECONDS } from "./lib/bench-load/plan";
import { readDurableObjects, readService, settleLeases } from "./lib/bench-load/read-back";
import {
  printChecks,
  printClientCounts,
  printLoadFigures,
  printStalls,
  printWrongPoolNote,
} from "./lib/bench-load/report";
import { setUpLoad } from "./lib/bench-load/setup";
import { generateDataProtectionKey, generateSigningKeys } from "./lib/keys";

const work = await mkdtemp(join(tmpdir(), "acapi-bench-load-"));
const statePath = join(work, "state");
let runtime: Miniflare | undefined;
let failed = false;
try {
  const secrets = { TOKEN_SIGNING_KEYS: await generateSigningKeys(), DATA_PROTECTION_KEY: generateDataProtectionKey() };
  const serviceScript = await buildService(join(work, "service"));
  runtime = await startRuntime(statePath, serviceScript, secrets, [], { signInWorker: true });
  const { url, clients } = await setUpLoad(runtime, secrets.DATA_PROTECTION_KEY);

  console.log(`\nLoad: ${SECONDS} s of mixed traffic, ${CONNECTIONS} connections, autocannon from Node.`);
  const outcome = await runLoad(url, clients);
  const finalCalls = await settleLeases(url, clients);
  const { storedDevices, objectIds } = await readService(runtime, clients);
  await runtime.dispose();
  runtime = undefined;
  const states = await readDurableObjects(statePath, objectIds);

  printLoadFigures(outcome);
  printStalls(outcome.stalls);
  const counts = countsByDurableObject(clients, states, finalCalls);
  printClientCounts(counts);
  const checks: Check[] = [
    ...answerChecks(outcome),
    deviceCheck(outcome.tally.devices, storedDevices),
    ...quotaChecks(counts),
    ...throttleChecks(clients, outcome.tally.wrongSent, states),
  ];
  printWrongPoolNote(outcome.wrongPoolExhausted);
  printChecks(checks);
  failed = checks.some((check) => !check.ok);
} catch (error) {
  failed = true;
  console.error(error);
} finally {
  await runtime?.dispose();
  await rm(work, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
