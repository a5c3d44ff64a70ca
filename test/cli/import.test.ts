/**
 * `npm run db:import` as an operator runs it: the real script and wrangler, against a throw-away
 * local D1 (`--persist-to`), so the developer's own .wrangler state is never touched.
 */
import { spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { generateDataProtectionKey } from "../../scripts/lib/keys";
import { OFFLINE_ENV } from "../../scripts/lib/wrangler";
import { npmScript } from "./commands";
import { localDatabase } from "./local-database";

const db = localDatabase("import-test");
const DATA_PROTECTION_KEY = generateDataProtectionKey();
const importFile = (file: string, ...options: string[]) => db.importFile(file, DATA_PROTECTION_KEY, ...options);
const { query, writeJson } = db;

/** Row counts, read back through wrangler. */
const counts = () =>
  query(
    "SELECT (SELECT count(*) FROM merchants) AS merchants, (SELECT count(*) FROM clients) AS clients, " +
      "(SELECT count(*) FROM users) AS users, (SELECT count(*) FROM user_emails) AS emails, " +
      "(SELECT count(*) FROM mail_events) AS events",
  )[0];

describe("npm run db:import", () => {
  it("imports the shared example file, hashing secrets, and a second import changes no count", async () => {
    const example = "test/fixtures/example-import.json";
    const first = importFile(example);
    expect(first.status).toBe(0);
    expect(first.stdout).toContain("Imported 2 merchants, 3 clients, 3 users");
    const after = counts();
    expect(after).toEqual({ merchants: 2, clients: 3, users: 3, emails: 4, events: 1 });
    expect(importFile(example).status).toBe(0);
    expect(counts()).toEqual(after);

    const [user] = query("SELECT password_hash FROM users WHERE id = 1001");
    expect(user!.password_hash).toMatch(/^pbkdf2-sha256\$100000\$/);
    const stored = JSON.stringify(query("SELECT * FROM clients"));
    const { clients } = JSON.parse(await readFile(example, "utf8")) as { clients: { secret: string }[] };
    for (const { secret } of clients) expect(stored).not.toContain(secret);
  });

  it("refuses an invalid file, naming each offending path, and writes nothing", async () => {
    const client = {
      id: "never-written-client",
      secret: "never-written-secret",
      name: "Never Written",
      merchantId: 901,
      ipAllowList: ["10.9.9.9"],
      css: { rules: "x".repeat(60_000) },
    };
    const file = join(db.path(), "bad.json");
    // Written as text so that `__proto__` is an own key, as in a hand-written file.
    await writeFile(
      file,
      JSON.stringify({
        merchants: [{ merchantId: 901, name: "Never Written" }],
        clients: [client],
        users: [{ userId: "x", uuid: "not-a-uuid", status: 7, published: "2023-02-29 00:00:00", updated: 0 }],
      }).replace('"css":{', '"termsCss":{"__proto__":{}},"css":{'),
    );
    const result = importFile(file);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain("nothing was written");
    for (const line of [
      "users[0].userId:",
      "users[0].uuid:",
      "users[0].status:",
      "users[0].published: expected a real date",
      "clients[0].ipAllowList: Unrecognized key",
      "clients[0].termsCss.__proto__:",
      "clients[0].css:",
    ]) {
      expect(result.stderr).toContain(line);
    }
    expect(query("SELECT id FROM merchants WHERE id = 901")).toEqual([]);
  });

  it("writes nothing when the database refuses one row of a valid file", async () => {
    const file = await writeJson("dangling.json", {
      merchants: [{ merchantId: 902, name: "Half Written" }],
      users: [
        {
          userId: "9902",
          uuid: crypto.randomUUID(),
          status: 1,
          published: "2024-01-01 00:00:00",
          updated: "2024-01-01 00:00:00",
          clients: ["no-such-client-000"],
        },
      ],
    });
    expect(importFile(file).status).toBe(1);
    expect(query("SELECT id FROM merchants WHERE id = 902")).toEqual([]);
    expect(query("SELECT id FROM users WHERE id = 9902")).toEqual([]);
  });

  it.each([
    ["SIGTERM", "the import alone", false],
    ["SIGINT", "its process group, as Ctrl-C does", true],
  ] as const)("removes its SQL script when stopped by %s sent to %s", async (signal, _, group) => {
    const scratch = await mkdtemp(join(tmpdir(), "acapi-import-tmp-"));
    const users = Array.from({ length: 3000 }, (_, i) => ({
      userId: 700_000 + i,
      uuid: crypto.randomUUID(),
      status: 1,
      email: `bulk${i}@example.org`,
      published: "2024-01-01 00:00:00",
      updated: "2024-01-01 00:00:00",
    }));
    const file = await writeJson("bulk.json", { users });
    const child = spawn(...npmScript("db:import", file, "--persist-to", db.path()), {
      env: { ...OFFLINE_ENV, DATA_PROTECTION_KEY, TMPDIR: scratch },
      stdio: "ignore",
      detached: true,
    });
    const exited = new Promise<number | null>((done) =>
      child.once("exit", (code, sig) => done(code ?? (sig ? -1 : null))),
    );
    const scripts = async () => (await readdir(scratch)).filter((name) => name.startsWith("acapi-import-"));
    while ((await scripts()).length === 0 && child.exitCode === null) {
      await new Promise((done) => setTimeout(done, 10));
    }
    expect(await scripts(), "the script was written before the import ended").toHaveLength(1);
    process.kill(group ? -child.pid! : child.pid!, signal);
    expect(await exited).not.toBe(0);
    expect(await scripts()).toEqual([]);
    await rm(scratch, { recursive: true, force: true });
  });

  it("refuses bad command lines with the usage, before touching any database", () => {
    for (const args of [["--bogus"], ["--remote"], ["--remote", "--env", "qa"], ["second.json"]]) {
      const result = importFile("file.json", ...args);
      expect(result.status).toBe(1);
      expect(result.stderr).toMatch(/usage|--remote needs|--persist-to is for/);
    }
    const missing = importFile(join(db.path(), "missing.json"));
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain("ENOENT");
  });
});
