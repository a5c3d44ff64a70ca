/**
 * npm run db:import -- <file.json> [--remote --env staging|production] [--persist-to <dir>]
 * Local by default (`--persist-to` picks another local state directory, as for wrangler).
 * DATA_PROTECTION_KEY comes from the environment, or from .dev.vars locally; an import under another
 * key than the database's first import is refused whole (scripts/lib/import.ts).
 */
import { parseArgs } from "node:util";
import { dataProtectionKeyProblem } from "../src/security/data-protection";
import { readDevVars } from "./lib/dev-vars";
import { ImportFileError, importIntoD1, readImportFile, summarize } from "./lib/import";

const usage = "usage: npm run db:import -- <file.json> [--remote --env staging|production] [--persist-to <dir>]";

const options = {
  remote: { type: "boolean", default: false },
  env: { type: "string" },
  "persist-to": { type: "string" },
} as const;

async function main(): Promise<number> {
  let args: ReturnType<typeof parseArgs<{ allowPositionals: true; options: typeof options }>>;
  try {
    args = parseArgs({ allowPositionals: true, options });
  } catch (err) {
    return fail(`${err instanceof Error ? err.message : String(err)}\n${usage}`);
  }
  const { values, positionals } = args;
  const [path] = positionals;
  if (!path || positionals.length > 1) return fail(usage);
  if (values.remote && values.env !== "staging" && values.env !== "production") {
    return fail("--remote needs --env staging or --env production");
  }
  if (values.remote && values["persist-to"] !== undefined) return fail("--persist-to is for the local database only");
  const dataProtectionKey =
    process.env.DATA_PROTECTION_KEY ?? (values.remote ? undefined : (await readDevVars()).DATA_PROTECTION_KEY);
  if (!dataProtectionKey) {
    return fail(
      values.remote
        ? "set DATA_PROTECTION_KEY to the value stored as that environment's secret"
        : "no DATA_PROTECTION_KEY: run `npm start` once (it writes .dev.vars) or set it in the environment",
    );
  }
  const keyProblem = dataProtectionKeyProblem(dataProtectionKey);
  if (keyProblem) return fail(keyProblem);
  try {
    const file = await readImportFile(path);
    await importIntoD1(file, {
      remote: values.remote,
      env: values.env,
      persistTo: values["persist-to"],
      dataProtectionKey,
    });
    console.log(`Imported ${summarize(file)} into the ${values.remote ? `${values.env} (remote)` : "local"} database.`);
    return 0;
  } catch (err) {
    if (err instanceof ImportFileError)
      return fail(`${path} is not a valid import file; nothing was written:\n  ${err.problems.join("\n  ")}`);
    return fail(err instanceof Error ? err.message : String(err));
  }
}

function fail(message: string): number {
  console.error(message);
  return 1;
}

process.exitCode = await main();
