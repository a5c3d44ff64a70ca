/**
 * A throw-away local D1 (`--persist-to`) for the CLI tests, migrated before the file's tests and
 * removed after them, so the developer's own .wrangler state is never touched: the real commands
 * run against it, and its rows are read back through wrangler.
 */
import { spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { OFFLINE_ENV } from "../../scripts/lib/wrangler";
import { bin, npmScript } from "./commands";

export type LocalDatabase = ReturnType<typeof localDatabase>;

export function localDatabase(name: string) {
  let state = "";
  beforeAll(async () => {
    state = await mkdtemp(join(tmpdir(), `acapi-${name}-`));
    const migrated = run([bin("wrangler"), ["d1", "migrations", "apply", "DB", "--local", "--persist-to", state]]);
    if (migrated.status !== 0) throw new Error(`migrations failed: ${migrated.stderr}`);
  });
  afterAll(async () => {
    await rm(state, { recursive: true, force: true });
  });

  function run([command, args]: [string, string[]], dataProtectionKey = "") {
    const { status, stdout, stderr } = spawnSync(command, args, {
      env: { ...OFFLINE_ENV, DATA_PROTECTION_KEY: dataProtectionKey },
      encoding: "utf8",
    });
    return { status, stdout, stderr };
  }

  return {
    /** The state directory (a file written there is removed with it). */
    path: () => state,
    run,
    importFile: (file: string, dataProtectionKey: string, ...options: string[]) =>
      run(npmScript("db:import", file, "--persist-to", state, ...options), dataProtectionKey),
    query(sql: string): Record<string, unknown>[] {
      const { status, stdout, stderr } = run([
        bin("wrangler"),
        ["d1", "execute", "DB", "--local", "--persist-to", state, "--json", "--command", sql],
      ]);
      if (status !== 0) throw new Error(`wrangler d1 execute failed: ${stderr}`);
      return (JSON.parse(stdout) as { results: Record<string, unknown>[] }[])[0]!.results;
    },
    async writeJson(name: string, json: unknown): Promise<string> {
      const file = join(state, name);
      await writeFile(file, JSON.stringify(json));
      return file;
    },
  };
}
