/**
 * Migrations on data, as wrangler applies them to D1: a migration that rebuilds a table must
 * keep every row of it and of the tables that refer to it (foreign keys are always on in D1).
 */
import { spawnSync } from "node:child_process";
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { OFFLINE_ENV } from "../../scripts/lib/wrangler";
import { bin } from "./commands";

let state: string;
let migrations: string;
let config: string;

function wrangler(...args: string[]) {
  const result = spawnSync(bin("wrangler"), [...args, "--config", config], { env: OFFLINE_ENV, encoding: "utf8" });
  if (result.status !== 0) throw new Error(`wrangler ${args.join(" ")} failed: ${result.stderr}${result.stdout}`);
  return result.stdout;
}

function query(sql: string): Record<string, unknown>[] {
  const stdout = wrangler("d1", "execute", "DB", "--local", "--persist-to", state, "--json", "--command", sql);
  return (JSON.parse(stdout) as { results: Record<string, unknown>[] }[])[0]!.results;
}

/** Copies the project's migrations up to (not including) the one whose name starts with `before`. */
async function migrationsBefore(before: string | null) {
  for (const name of (await readdir("migrations")).filter((n) => n.endsWith(".sql")).sort()) {
    if (before !== null && name >= before) break;
    await copyFile(join("migrations", name), join(migrations, name));
  }
  wrangler("d1", "migrations", "apply", "DB", "--local", "--persist-to", state);
}

// A new local database for every case.
beforeEach(async () => {
  state = await mkdtemp(join(tmpdir(), "acapi-migrations-test-"));
  migrations = join(state, "migrations");
  await mkdir(migrations);
  // The project's config, with its migrations folder swapped for the copy.
  const toml = await readFile("wrangler.toml", "utf8");
  config = join(state, "wrangler.toml");
  await writeFile(
    config,
    toml
      .replaceAll('migrations_dir = "migrations"', `migrations_dir = "${migrations}"`)
      .replace('main = "src/index.ts"', `main = "${resolve("src/index.ts")}"`),
  );
});

afterEach(async () => {
  await rm(state, { recursive: true, force: true });
});

describe("migration 0008 (mails for addresses without a user)", () => {
  it("keeps every mail and every mail event, and lets a mail have no user", async () => {
    await migrationsBefore("0008");
    query(
      "INSERT INTO merchants (id, name) VALUES (1, 'M'); " +
        "INSERT INTO users (id, uuid) VALUES (7, '00000000-0000-4000-8000-000000000007'); " +
        "INSERT INTO mails (id, user_id, template, sender_email, user_email, created, token) VALUES " +
        "(1, 7, 'welcome', 'shop@example.com', 'a@example.org', 100, 't1'), " +
        "(2, 7, 'receipt', 'shop@example.com', 'a@example.org', 200, 't2'); " +
        "INSERT INTO mail_events (mail_id, event, timestamp) VALUES (1, 'sent', 101), (1, 'opened', 150), (2, 'sent', 201);",
    );
    await migrationsBefore(null);
    expect(query("SELECT id, user_id, token FROM mails ORDER BY id")).toEqual([
      { id: 1, user_id: 7, token: "t1" },
      { id: 2, user_id: 7, token: "t2" },
    ]);
    expect(query("SELECT mail_id, event, timestamp FROM mail_events ORDER BY id")).toEqual([
      { mail_id: 1, event: "sent", timestamp: 101 },
      { mail_id: 1, event: "opened", timestamp: 150 },
      { mail_id: 2, event: "sent", timestamp: 201 },
    ]);
    query(
      "INSERT INTO mails (user_id, template, sender_email, user_email, created, token) VALUES " +
        "(NULL, 'signin', 'shop@example.com', 'new@example.org', 300, 't3')",
    );
    // The events still belong to their mails: deleting the user takes both along.
    query("DELETE FROM users WHERE id = 7");
    expect(query("SELECT count(*) AS mails FROM mails")).toEqual([{ mails: 1 }]);
    expect(query("SELECT count(*) AS events FROM mail_events")).toEqual([{ events: 0 }]);
    expect(query("SELECT count(*) AS tables FROM sqlite_master WHERE name = 'mail_events_copy'")).toEqual([
      { tables: 0 },
    ]);
  });
});

describe("migration 0013 (SPiD's value sets)", () => {
  it("moves product types and digital-content statuses to SPiD's sets, keeping every row of both tables", async () => {
    await migrationsBefore("0013");
    query(
      "INSERT INTO merchants (id, name) VALUES (1, 'M'); " +
        "INSERT INTO clients (id, secret_hash, name, merchant_id) VALUES ('client-0013', 'x', 'C', 1); " +
        "INSERT INTO users (id, uuid) VALUES (7, '00000000-0000-4000-8000-000000000007'); " +
        "INSERT INTO products (id, client_id, type, name, price, currency, status) VALUES " +
        "(1, 'client-0013', 1, 'Product', 100, 'NOK', 3), (2, 'client-0013', 2, 'Subscription', 200, 'NOK', 3), " +
        "(3, 'client-0013', 3, 'Digital content', 300, 'NOK', 1); " +
        "INSERT INTO digital_contents (id, product_id, client_id, user_id, status) VALUES " +
        "(10, 3, 'client-0013', 7, 1), (11, 3, 'client-0013', 7, 0), (12, 3, 'client-0013', 7, -1), (13, 3, 'client-0013', 7, -2);",
    );
    await migrationsBefore(null);
    expect(query("SELECT id, type, price FROM products ORDER BY id")).toEqual([
      { id: 1, type: 0, price: 100 },
      { id: 2, type: 2, price: 200 },
      { id: 3, type: 1, price: 300 },
    ]);
    expect(query("SELECT id, product_id, status FROM digital_contents ORDER BY id")).toEqual([
      { id: 10, product_id: 3, status: 3 },
      { id: 11, product_id: 3, status: 0 },
      { id: 12, product_id: 3, status: -1 },
      { id: 13, product_id: 3, status: -2 },
    ]);
    // The new defaults, the foreign key to products, and the indexes are in place; the copy is gone.
    query(
      "INSERT INTO products (id, client_id, name, currency) VALUES (4, 'client-0013', 'New', 'NOK'); " +
        "INSERT INTO digital_contents (id, product_id, client_id, user_id) VALUES (14, 4, 'client-0013', 7);",
    );
    expect(query("SELECT type FROM products WHERE id = 4")).toEqual([{ type: 0 }]);
    expect(query("SELECT status FROM digital_contents WHERE id = 14")).toEqual([{ status: 3 }]);
    expect(() =>
      query("INSERT INTO digital_contents (product_id, client_id, user_id) VALUES (99, 'client-0013', 7)"),
    ).toThrow(/FOREIGN KEY/);
    const indexes = query(
      "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name IN ('products', 'digital_contents') AND name NOT LIKE 'sqlite_%' ORDER BY name",
    ).map((row) => row.name);
    // Every index of the schema (migration 0018 added digital_contents_user_idx).
    expect(indexes).toHaveLength(17);
    expect(
      query("SELECT count(*) AS tables FROM sqlite_master WHERE name IN ('digital_contents_copy', '__new_products')"),
    ).toEqual([{ tables: 0 }]);
  });
});
