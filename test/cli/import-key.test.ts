/**
 * `npm run db:import` and the DATA_PROTECTION_KEY: the first import records the key's fingerprint,
 * and an import under another key is refused whole (migration 0011's trigger), against a throw-away
 * local D1 as in import.test.ts.
 */
import { spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateDataProtectionKey } from "../../scripts/lib/keys";
import { OFFLINE_ENV } from "../../scripts/lib/wrangler";
import { bin, npmScript } from "./commands";

let state: string;

function run([command, args]: [string, string[]], dataProtectionKey = "") {
  const { status, stdout, stderr } = spawnSync(command, args, {
    env: { ...OFFLINE_ENV, DATA_PROTECTION_KEY: dataProtectionKey },
    encoding: "utf8",
  });
  return { status, stdout, stderr };
}

function importFile(file: string, dataProtectionKey: string) {
  return run(npmScript("db:import", file, "--persist-to", state), dataProtectionKey);
}

function query(sql: string): Record<string, unknown>[] {
  const { status, stdout, stderr } = run([
    bin("wrangler"),
    ["d1", "execute", "DB", "--local", "--persist-to", state, "--json", "--command", sql],
  ]);
  if (status !== 0) throw new Error(`wrangler d1 execute failed: ${stderr}`);
  return (JSON.parse(stdout) as { results: Record<string, unknown>[] }[])[0]!.results;
}

async function merchantsFile(name: string, merchantId: number): Promise<string> {
  const file = join(state, name);
  await writeFile(file, JSON.stringify({ merchants: [{ merchantId, name }] }));
  return file;
}

beforeAll(async () => {
  state = await mkdtemp(join(tmpdir(), "acapi-import-key-test-"));
  const migrated = run([bin("wrangler"), ["d1", "migrations", "apply", "DB", "--local", "--persist-to", state]]);
  if (migrated.status !== 0) throw new Error(`migrations failed: ${migrated.stderr}`);
});

afterAll(async () => {
  await rm(state, { recursive: true, force: true });
});

describe("npm run db:import and the DATA_PROTECTION_KEY", () => {
  it("records the first import's key and refuses a later import under another key, writing nothing", async () => {
    const key = generateDataProtectionKey();
    expect(importFile(await merchantsFile("first.json", 911), key).status).toBe(0);
    const recorded = query("SELECT name, fingerprint FROM key_fingerprints");
    expect(recorded).toEqual([{ name: "DATA_PROTECTION_KEY", fingerprint: expect.stringMatching(/^[\w-]{43}$/) }]);
    expect(JSON.stringify(recorded)).not.toContain(key);

    const other = await merchantsFile("other.json", 912);
    const refused = importFile(other, generateDataProtectionKey());
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(
      "Refused: the database holds data imported under another DATA_PROTECTION_KEY, so clients imported under " +
        "this one could never authenticate; nothing was written.",
    );
    expect(query("SELECT id FROM merchants WHERE id = 912")).toEqual([]);
    expect(query("SELECT name, fingerprint FROM key_fingerprints")).toEqual(recorded);

    expect(importFile(other, key).status).toBe(0);
    expect(query("SELECT id FROM merchants WHERE id = 912")).toEqual([{ id: 912 }]);
  });

  it("refuses a malformed key before touching the database", async () => {
    const result = importFile(await merchantsFile("short-key.json", 913), "c2hvcnQ");
    expect(result.status).toBe(1);
    expect(result.stderr).toContain("DATA_PROTECTION_KEY must be at least 32 bytes, base64url-encoded");
    expect(query("SELECT id FROM merchants WHERE id = 913")).toEqual([]);
  });
});
