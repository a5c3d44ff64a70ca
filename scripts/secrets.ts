/**
 * `npm run secrets -- <staging|production> [file.json]`: stores secrets in both Workers of an
 * environment, the sign-in Worker (wrangler.sign-in.toml) first and then the edge Worker, since
 * both run the same code on the same data and must hold the same keys (docs/operations.md
 * "Deploying staging and production"). Reads a JSON object of names to string values, as
 * `npm run keys` prints it and `wrangler secret bulk` takes it, from the file or from stdin.
 */
import { readFile, rm, writeFile, mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { text } from "node:stream/consumers";
import { wranglerSucceeds } from "./lib/wrangler";

const ENVIRONMENTS = ["staging", "production"];
const CONFIGS = ["wrangler.sign-in.toml", "wrangler.toml"];

const [environment, file, ...rest] = process.argv.slice(2);
if (!ENVIRONMENTS.includes(environment!) || rest.length > 0) {
  console.error(`usage: npm run secrets -- <${ENVIRONMENTS.join("|")}> [file.json]   (or the JSON on stdin)`);
  process.exit(2);
}

const secrets = parseSecrets(file === undefined ? await text(process.stdin) : await readFile(file, "utf8"));
if (secrets === null) {
  console.error('The secrets must be a JSON object of names to strings: {"NAME": "value", ...}. Nothing was stored.');
  process.exit(2);
}

// wrangler reads the secrets from a file; it lives only as long as the two commands.
const work = await mkdtemp(join(tmpdir(), "acapi-secrets-"));
const bulk = join(work, "secrets.json");
try {
  await writeFile(bulk, JSON.stringify(secrets), { mode: 0o600 });
  for (const config of CONFIGS) {
    console.log(`Storing ${Object.keys(secrets).join(", ")} in ${environment}'s Worker of ${config}`);
    if (!(await wranglerSucceeds(["secret", "bulk", bulk, "-c", config, "--env", environment!]))) {
      console.error(
        `Storing in ${config}'s Worker failed; run this again once it is fixed (it stores the same values).`,
      );
      process.exitCode = 1;
      break;
    }
  }
} finally {
  await rm(work, { recursive: true, force: true });
}

function parseSecrets(json: string): Record<string, string> | null {
  try {
    const value: unknown = JSON.parse(json);
    if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
    const entries = Object.entries(value);
    return entries.length > 0 && entries.every(([, v]) => typeof v === "string")
      ? (value as Record<string, string>)
      : null;
  } catch {
    return null;
  }
}
