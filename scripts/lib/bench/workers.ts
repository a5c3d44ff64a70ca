/**
 * The workers under test: the service as `wrangler deploy` would upload it, and the bare baseline
 * (bench/baseline.ts), in one workerd, each on its own socket; the service's development twin
 * beside them for the figures only Server-Timing gives.
 */
import { join } from "node:path";
import type { Miniflare } from "miniflare";
import demo from "../../../data/demo.json" with { type: "json" };
import { bundle, buildService, DEVELOPMENT_TWIN, type Secrets, seed, startRuntime, workerUrl } from "../bench-runtime";
import { BENCH_CLIENT, FORM, PERSISTENT_BENCH_CLIENT } from "./plan";

/** A worker the load goes to, with the benchmark client's tokens for it. */
export type Target = { name: string; url: string; serverToken: string; userToken?: string };
export type Targets = { service: Target; baseline: Target; twin: Target };

/** Builds the service and the baseline under `work` and starts both in one workerd process. */
export async function startWorkers(
  work: string,
  secrets: Secrets,
): Promise<{ runtime: Miniflare; serviceScript: string }> {
  const serviceScript = await buildService(join(work, "service"));
  const baselineScript = await bundle("bench/baseline.ts", join(work, "baseline.js"));
  const runtime = await startRuntime(
    join(work, "state"),
    serviceScript,
    secrets,
    [{ name: "baseline", scriptPath: baselineScript, bindings: { TOKEN_SIGNING_KEYS: secrets.TOKEN_SIGNING_KEYS } }],
    { environment: "production" },
  );
  return { runtime, serviceScript };
}

/** Seeds the demo data and the benchmark client, and gets a server token from each worker. */
export async function prepareTargets(runtime: Miniflare, dataProtectionKey: string): Promise<Targets> {
  const rateLimit = { limit: 10_000_000, windowSeconds: 3600 };
  await seed(runtime, dataProtectionKey, [
    { ...demo.clients[0]!, ...BENCH_CLIENT, name: "Benchmark", rateLimit },
    {
      ...demo.clients[0]!,
      ...PERSISTENT_BENCH_CLIENT,
      name: "Benchmark, persistent",
      rateLimit,
      refreshTokenRotation: false,
    },
  ]);
  const targets: Target[] = [];
  for (const name of ["service", "baseline"]) {
    const url = await workerUrl(runtime, name);
    targets.push({ name, url, serverToken: await fetchToken(url) });
  }
  const [service, baseline] = targets as [Target, Target];
  // Tokens are the service's, signed with the same keys: the twin accepts them.
  const twin: Target = { ...service, name: DEVELOPMENT_TWIN, url: await workerUrl(runtime, DEVELOPMENT_TWIN) };
  return { service, baseline, twin };
}

export async function fetchToken(url: string): Promise<string> {
  const res = await fetch(`${url}/oauth/token`, {
    method: "POST",
    headers: { "Content-Type": FORM },
    body: new URLSearchParams({
      grant_type: "client_credentials",
      client_id: BENCH_CLIENT.id,
      client_secret: BENCH_CLIENT.secret,
    }),
  });
  if (!res.ok) throw new Error(`token for the benchmark: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { access_token: string }).access_token;
}
