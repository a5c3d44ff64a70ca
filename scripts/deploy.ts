/**
 * `npm run deploy:staging` and `npm run deploy:production`: apply the environment's pending D1
 * migrations, then deploy, and never the other way round: the migrations are written so that the
 * running version keeps working with them (docs/operations.md "Deploying staging and
 * production"), while a version deployed before its migrations would query columns that are not
 * there yet. A failed migration stops the deploy. Two Workers are deployed from the same code: the
 * sign-in Worker (wrangler.sign-in.toml) first, then the edge Worker that passes it requests
 * (wrangler.toml), so that the edge never runs a version ahead of it. `-- --dry-run` builds both
 * and applies nothing.
 *
 * `-- --first`, for an environment never deployed: each Worker names the other (the edge binds the
 * sign-in Worker; the sign-in Worker binds the edge's Durable Object class), and Cloudflare refuses
 * a binding to a Worker that does not exist. So a placeholder sign-in Worker, which answers 503
 * "try again", is deployed first, then the edge Worker, then the real sign-in Worker in its place.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { unstable_readConfig } from "wrangler";
import { wranglerSucceeds as wrangler } from "./lib/wrangler";

const ENVIRONMENTS = ["staging", "production"];

const { values, positionals } = parseArgs({
  options: { "dry-run": { type: "boolean", default: false }, first: { type: "boolean", default: false } },
  allowPositionals: true,
});
const [environment] = positionals;
if (positionals.length !== 1 || !ENVIRONMENTS.includes(environment!)) {
  console.error(`usage: node --import tsx scripts/deploy.ts <${ENVIRONMENTS.join("|")}> [--dry-run] [--first]`);
  process.exit(2);
}

/** The Workers in the order they are deployed: the sign-in Worker, then the edge Worker. */
const WORKERS = [
  { name: "sign-in Worker", config: "wrangler.sign-in.toml" },
  { name: "edge Worker", config: "wrangler.toml" },
];

async function deployAll(dryRun: boolean): Promise<boolean> {
  for (const worker of WORKERS) {
    console.log(`${dryRun ? "Building" : "Deploying"} ${environment}'s ${worker.name} (${worker.config})`);
    const args = ["deploy", "-c", worker.config, "--env", environment!, ...(dryRun ? ["--dry-run"] : [])];
    if (!(await wrangler(args))) {
      console.error(`${environment}'s ${worker.name} did not ${dryRun ? "build" : "deploy"}; nothing after it was.`);
      return false;
    }
  }
  return true;
}

/**
 * A Worker under the sign-in Worker's name that answers every request 503 with Retry-After, so
 * that the edge Worker's binding to it resolves on an environment's first deploy.
 */
async function deployPlaceholder(dryRun: boolean): Promise<boolean> {
  const signIn = unstable_readConfig({ config: "wrangler.sign-in.toml", env: environment! });
  const work = await mkdtemp(join(tmpdir(), "acapi-placeholder-"));
  try {
    await writeFile(
      join(work, "placeholder.js"),
      'export default { fetch: () => Response.json({ error: "temporarily_unavailable", error_description: "The service is being deployed; try again shortly" }, { status: 503, headers: { "Retry-After": "5" } }) };\n',
    );
    await writeFile(
      join(work, "wrangler.toml"),
      `name = "${signIn.name}"\nmain = "placeholder.js"\ncompatibility_date = "${signIn.compatibility_date}"\nworkers_dev = false\n`,
    );
    console.log(
      `${dryRun ? "Building" : "Deploying"} a placeholder for ${environment}'s sign-in Worker (${signIn.name}), first deploy only`,
    );
    return await wrangler(["deploy", "-c", join(work, "wrangler.toml"), ...(dryRun ? ["--dry-run"] : [])]);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

if (values["dry-run"]) {
  console.log(`dry run: would apply the pending migrations of ${environment}'s database, then deploy`);
  if (values.first && !(await deployPlaceholder(true))) process.exit(1);
  process.exit((await deployAll(true)) ? 0 : 1);
}
console.log(`Applying ${environment}'s pending D1 migrations`);
if (!(await wrangler(["d1", "migrations", "apply", "DB", "--remote", "--env", environment!]))) {
  console.error(`Not deployed: ${environment}'s migrations did not apply. Fix that, then deploy again.`);
  process.exit(1);
}
if (values.first) {
  const ready =
    (await deployPlaceholder(false)) && (await wrangler(["deploy", "-c", "wrangler.toml", "--env", environment!]));
  if (!ready) {
    console.error(`${environment}'s first deploy stopped; fix what wrangler said, then run it again.`);
    process.exit(1);
  }
}
process.exit((await deployAll(false)) ? 0 : 1);
