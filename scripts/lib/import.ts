/**
 * Imports a JSON file into D1: validated with the same zod schema and hashed with the same code
 * the Worker uses, rendered as one SQL script and applied with `wrangler d1 execute --file`,
 * which runs it as a single batch: all rows or none.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { drizzle } from "drizzle-orm/sqlite-proxy";
import { buildImportStatements } from "../../src/db/import";
import * as schema from "../../src/db/schema";
import { toSqlScript } from "../../src/db/sql-script";
import { describeImportErrors, type ImportFile, importFileSchema } from "../../src/schemas/import";
import { onStop } from "./on-stop";
import { runWrangler } from "./wrangler";

export type ImportTarget = {
  remote: boolean;
  env?: string | undefined;
  /** Local state directory, when not wrangler's default. */
  persistTo?: string | undefined;
  dataProtectionKey: string;
};

export class ImportFileError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join("\n"));
  }
}

/** How migration 0011's trigger refuses an import under another key: its whole script, nothing written. */
const OTHER_KEY_REFUSAL = "the database holds data protected under another DATA_PROTECTION_KEY";

/** The database's data is protected under another DATA_PROTECTION_KEY than the import's; nothing was written. */
export class DataProtectionKeyMismatch extends Error {
  constructor() {
    super(
      "Refused: the database holds data imported under another DATA_PROTECTION_KEY, so clients " +
        "imported under this one could never authenticate; nothing was written. Import with the " +
        "key the Worker uses (that environment's secret, or .dev.vars locally); to move the " +
        "database to a new key on purpose, delete its key_fingerprints row and import every client again.",
    );
  }
}

export async function readImportFile(path: string): Promise<ImportFile> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(path, "utf8"));
  } catch (err) {
    throw new ImportFileError([`${path}: ${err instanceof Error ? err.message : String(err)}`]);
  }
  const result = importFileSchema.safeParse(json);
  if (!result.success) throw new ImportFileError(describeImportErrors(result.error));
  return result.data;
}

export async function importIntoD1(file: ImportFile, target: ImportTarget): Promise<void> {
  // A driver that never runs anything: it only lets drizzle render the statements.
  const recorder = drizzle(async () => ({ rows: [] }), { schema });
  const statements = await buildImportStatements(recorder, file, target.dataProtectionKey);
  // The script holds hashed and sealed secrets: readable by this user only, and removed on every
  // way out, a signal included. The clean-up is registered before the directory exists and the
  // directory made synchronously, so no signal can fall between the two.
  let dir: string | undefined;
  const removeScript = () => dir !== undefined && rmSync(dir, { recursive: true, force: true });
  const forget = onStop(removeScript);
  try {
    dir = mkdtempSync(join(tmpdir(), "acapi-import-"));
    const scriptPath = join(dir, "import.sql");
    await writeFile(scriptPath, toSqlScript(statements.map((statement) => statement.toSQL())), { mode: 0o600 });
    const args = ["d1", "execute", "DB", target.remote ? "--remote" : "--local", "--file", scriptPath, "--yes"];
    if (target.env) args.push("--env", target.env);
    if (target.persistTo) args.push("--persist-to", target.persistTo);
    const run = await runWrangler(args);
    if (!run.ok) {
      throw run.stderr.includes(OTHER_KEY_REFUSAL)
        ? new DataProtectionKeyMismatch()
        : new Error("wrangler d1 execute failed; nothing was written");
    }
  } finally {
    try {
      removeScript();
    } catch (err) {
      console.error(`could not remove ${dir}; delete it by hand: ${err instanceof Error ? err.message : String(err)}`);
    }
    forget();
  }
}

export function summarize(file: ImportFile): string {
  return (["merchants", "clients", "users", "products", "digitalContents", "mails"] as const)
    .map((kind) => `${file[kind].length} ${kind}`)
    .join(", ");
}
