/**
 * What the benchmarks (scripts/bench.ts, scripts/bench-load.ts) share: the exact bundle `wrangler
 * deploy` would upload, started in one local workerd through Miniflare with the real local D1, KV
 * and Durable Object bindings of wrangler.toml's top level (ENVIRONMENT=development, so responses
 * carry Server-Timing; or production, with a development twin), each worker on its own socket;
 * the migrations and the demo data; imports through the same builder as `npm run db:import`.
 */
import { readdirSync, readFileSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { drizzle } from "drizzle-orm/d1";
import { build } from "esbuild";
import { convertV4MiniflareOptions, Miniflare } from "miniflare";
import { unstable_getMiniflareWorkerOptions } from "wrangler";
import demo from "../../data/demo.json" with { type: "json" };
import { buildImportStatements } from "../../src/db/import";
import * as schema from "../../src/db/schema";
import { toSqlScript } from "../../src/db/sql-script";
import { importFileSchema } from "../../src/schemas/import";
import { runWrangler } from "./wrangler";

/** The development twin of a production-mode service (startRuntime). */
export const DEVELOPMENT_TWIN = "service-development";

export type Secrets = { TOKEN_SIGNING_KEYS: string; DATA_PROTECTION_KEY: string };

/** The sign-in Worker of a split runtime (startRuntime's `signInWorker`). */
export const SIGN_IN_WORKER = "sign-in";

/**
 * How the service runs: `environment` "production" as deployed to production (no Server-Timing),
 * with a development twin; `signInWorker` split in two as staging and production deploy it.
 */
export type RuntimeLayout = { environment?: "development" | "production"; signInWorker?: boolean };

/** A worker started beside the service: a bundled script and its bindings. */
export type ExtraWorker = { name: string; scriptPath: string; bindings: Record<string, string> };

/**
 * The service (`serviceScript`, from buildService) and `extra` workers in one workerd process,
 * each reached on its own socket (Miniflare's unsafeGetDirectURL), so neither pays for a router
 * the other skips. The service's state (D1, KV, Durable Objects) persists under `statePath`.
 *
 * With `environment` "production" the service runs as deployed to production (no Server-Timing),
 * and a twin of it, `DEVELOPMENT_TWIN`, runs the same script with ENVIRONMENT=development on the
 * same D1, KV and Durable Objects, for the figures only Server-Timing gives. With `signInWorker`,
 * the service passes its sign-ins to `SIGN_IN_WORKER`, the same script placed (BENCH_PLACED).
 */
export async function startRuntime(
  statePath: string,
  serviceScript: string,
  secrets: Secrets,
  extra: ExtraWorker[] = [],
  { environment = "development", signInWorker = false }: RuntimeLayout = {},
): Promise<Miniflare> {
  // The bindings of wrangler.toml's top level (local D1, KV, Durable Object); module rules are
  // for unbundled sources and do not apply to the built script.
  const { modulesRules: _, ...workerOptions } = unstable_getMiniflareWorkerOptions("wrangler.toml").workerOptions;
  const directSocket = [{ host: "127.0.0.1", port: 0 }];
  const service = (name: string, vars: Record<string, string>) => ({
    ...workerOptions,
    name,
    modules: true,
    scriptPath: serviceScript,
    modulesRoot: dirname(serviceScript),
    bindings: {
      ...(workerOptions.bindings as Record<string, unknown>),
      ...secrets,
      BASE_URL: "http://127.0.0.1",
      ...vars,
    },
    unsafeDirectSockets: directSocket,
  });
  const twin =
    environment === "production"
      ? [
          {
            ...service(DEVELOPMENT_TWIN, {}),
            // The service's own objects: one counter per client, whichever worker asks.
            durableObjects: { RATE_LIMITER: { className: "RateLimiter", scriptName: "service" } },
            // A queue has one consumer: the service; the twin only sends to it.
            queueConsumers: {},
          },
        ]
      : [];
  // The service as staging and production split it (docs/edge.md "The sign-in Worker"): the same
  // script again, bound as SIGN_IN, on the service's storage and objects, told it is the placed one.
  const signIn = signInWorker
    ? [
        {
          ...service(SIGN_IN_WORKER, {
            ...(environment === "production" && { ENVIRONMENT: "production" }),
            BENCH_PLACED: "1",
          }),
          durableObjects: { RATE_LIMITER: { className: "RateLimiter", scriptName: "service" } },
          queueConsumers: {},
        },
      ]
    : [];
  const edge = service("service", environment === "production" ? { ENVIRONMENT: "production" } : {});
  const runtime = new Miniflare(
    convertV4MiniflareOptions({
      resourcePersistencePath: statePath,
      cf: false,
      workers: [
        signInWorker ? { ...edge, serviceBindings: { SIGN_IN: SIGN_IN_WORKER } } : edge,
        ...signIn,
        ...twin,
        ...extra.map((worker) => ({
          name: worker.name,
          modules: true,
          scriptPath: worker.scriptPath,
          modulesRoot: dirname(worker.scriptPath),
          compatibilityDate: workerOptions.compatibilityDate as string,
          bindings: worker.bindings,
          unsafeDirectSockets: directSocket,
        })),
      ],
    }),
  );
  await runtime.ready;
  return runtime;
}

/** Linux's USER_HZ: /proc counts CPU time in these ticks. */
const TICKS_PER_SECOND = 100;

/**
 * A reader of the CPU time (user and system, in microseconds) the workerd process started by this
 * one has used so far, from /proc; null where there is no /proc (not Linux) or no such child. One
 * workerd runs every worker of the runtime, so the CPU of a span in which only one worker is loaded
 * is that worker's, with the HTTP server, its Durable Objects and Miniflare's D1 simulator.
 */
export function workerdCpuReader(): (() => number) | null {
  try {
    const children = readdirSync("/proc/self/task").flatMap((task) =>
      readFileSync(`/proc/self/task/${task}/children`, "utf8").split(" ").filter(Boolean),
    );
    const pid = children.find((child) => readFileSync(`/proc/${child}/comm`, "utf8").trim() === "workerd");
    if (pid === undefined) return null;
    return () => {
      // The fields after the command's closing parenthesis start at the third; utime and stime are the 14th and 15th.
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
      return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / TICKS_PER_SECOND;
    };
  } catch {
    return null;
  }
}

/** The worker's own socket, without a trailing slash. */
export async function workerUrl(runtime: Miniflare, name: string): Promise<string> {
  return (await runtime.unsafeGetDirectURL(name)).toString().replace(/\/$/, "");
}

/** Migrations and the demo data, with `clients` added to the demo's. */
export async function seed(mf: Miniflare, dataProtectionKey: string, clients: unknown[] = []): Promise<void> {
  const d1 = await mf.getD1Database("DB", "service");
  for (const name of (await readdir("migrations")).filter((file) => file.endsWith(".sql")).sort()) {
    const migration = await readFile(join("migrations", name), "utf8");
    await d1.batch(
      migration
        .split("--> statement-breakpoint")
        .map((statement) => statement.trim())
        .filter(Boolean)
        .map((statement) => d1.prepare(statement)),
    );
  }
  const file = importFileSchema.parse({ ...demo, clients: [...demo.clients, ...clients] });
  const db = drizzle(d1 as unknown as Parameters<typeof drizzle>[0], { schema });
  const [first, ...rest] = await buildImportStatements(db, file, dataProtectionKey);
  await db.batch([first!, ...rest]);
}

/**
 * Imports `file` (the import format) into the service's D1 as one SQL script: through Miniflare's
 * proxy each prepared statement would be a round trip.
 */
export async function importScript(mf: Miniflare, file: unknown, dataProtectionKey: string): Promise<void> {
  const d1 = await mf.getD1Database("DB", "service");
  const db = drizzle(d1 as unknown as Parameters<typeof drizzle>[0], { schema });
  const statements = await buildImportStatements(db, importFileSchema.parse(file), dataProtectionKey);
  await d1.exec(toSqlScript(statements.map((statement) => statement.toSQL())));
}

/** The exact bundle `wrangler deploy` would upload. */
export async function buildService(outdir: string): Promise<string> {
  if (!(await runWrangler(["deploy", "--dry-run", "--env", "production", "--outdir", outdir])).ok) {
    throw new Error("wrangler deploy --dry-run failed");
  }
  return join(outdir, "index.js");
}

export async function bundle(entry: string, outfile: string): Promise<string> {
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: "esm",
    minify: true,
    platform: "neutral",
    mainFields: ["module", "main"],
  });
  return outfile;
}

export function fmt(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

export function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ");
  console.log(line(header));
  console.log(line(widths.map((w) => "-".repeat(w))));
  for (const row of rows) console.log(line(row));
}
