/**
 * `npm run deploy:staging` and `npm run deploy:production`: apply the environment's pending D1
 * migrations, then deploy, and never the other way round: the migrations are written so that the
 * running version keeps working with them (docs/operations.md "Deploying staging and
 * production"), while a version deployed before its migrations would query columns that are not
 * there yet. A failed migration stops the deploy. Two Workers are deployed from the same code: the
 * sign-in Worker (wrangler.sign-in.toml) first, then the edge Worker that passes it requests
 * (wrangler.toml), so that the edge never runs a version ahead of it. `-- --dry-run` builds both
 * and applies nothing.
 */
import { parseArgs } from "node:util";
import { startWrangler } from "./lib/wrangler";

const ENVIRONMENTS = ["staging", "production"];

const { values, positionals } = parseArgs({
  options: { "dry-run": { type: "boolean", default: false } },
  allowPositionals: true,
});
const [environment] = positionals;
if (positionals.length !== 1 || !ENVIRONMENTS.includes(environment!)) {
  console.error(`usage: node --import tsx scripts/deploy.ts <${ENVIRONMENTS.join("|")}> [--dry-run]`);
  process.exit(2);
}

/** Runs wrangler with its output shown, and resolves to whether it succeeded. */
function wrangler(args: string[]): Promise<boolean> {
  const child = startWrangler(args, { env: process.env });
  return new Promise((done) => {
    child.once("error", () => done(false));
    child.once("exit", (code) => done(code === 0));
  });
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

if (values["dry-run"]) {
  console.log(`dry run: would apply the pending migrations of ${environment}'s database, then deploy`);
  process.exit((await deployAll(true)) ? 0 : 1);
}
console.log(`Applying ${environment}'s pending D1 migrations`);
if (!(await wrangler(["d1", "migrations", "apply", "DB", "--remote", "--env", environment!]))) {
  console.error(`Not deployed: ${environment}'s migrations did not apply. Fix that, then deploy again.`);
  process.exit(1);
}
process.exit((await deployAll(false)) ? 0 : 1);
