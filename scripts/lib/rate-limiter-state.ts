/**
 * Reads a client's RateLimiter Durable Object (src/durable-objects/rate-limiter.ts) from the
 * SQLite file Miniflare persisted it in, once the runtime has been disposed: the object has no
 * method that reads its counter, and the Worker has (and should have) no endpoint for it.
 * `ctx.storage.kv` lives in the `_cf_KV` table, each value serialized with V8's serializer (which
 * Node's `v8.deserialize` reads); `password_failures` is the object's own table (docs/storage.md).
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { deserialize } from "node:v8";

/** The window record under the key `window`, as the object writes it. */
export type WindowRecord = { endsAt: number; count: number; leases: Record<string, number>; nextLease: number };

export type RateLimiterState = {
  window: WindowRecord | undefined;
  /**
   * `password_failures` counted for an account from every network: account key (`user:<id>`,
   * `name:<hash>`) to its count and end (ms).
   */
  passwordFailures: Map<string, { count: number; endsAt: number }>;
};

/**
 * The state of the object whose id is `idHex` (`idFromName(clientId).toString()`), found under
 * Miniflare's `<statePath>/do/<worker>-<class>/<id>.sqlite`. The runtime must have been disposed.
 */
export async function readRateLimiterState(statePath: string, idHex: string): Promise<RateLimiterState> {
  const file = await findFile(join(statePath, "do"), `${idHex}.sqlite`);
  if (!file) throw new Error(`no SQLite file for Durable Object ${idHex} under ${statePath}/do`);
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const row = db.prepare("SELECT value FROM _cf_KV WHERE key = ?").get("window") as { value: Uint8Array } | undefined;
    const window = row ? (deserialize(Buffer.from(row.value)) as WindowRecord) : undefined;
    const passwordFailures = new Map<string, { count: number; endsAt: number }>();
    const rows = db
      .prepare("SELECT account, count, ends_at FROM password_failures WHERE network = '*' AND account <> '*'")
      .all() as {
      account: string;
      count: number;
      ends_at: number;
    }[];
    for (const { account, count, ends_at } of rows) passwordFailures.set(account, { count, endsAt: ends_at });
    return { window, passwordFailures };
  } finally {
    db.close();
  }
}

async function findFile(dir: string, name: string): Promise<string | undefined> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      const found = await findFile(path, name);
      if (found) return found;
    } else if (entry.name === name) {
      return path;
    }
  }
  return undefined;
}
