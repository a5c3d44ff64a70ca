/**
 * The deployment commands, run as `npm run` runs them: `npm run keys` prints fresh secrets for
 * `wrangler secret bulk`, and `npm run deploy:<env>` applies migrations before it deploys its two
 * Workers (only its refusals and its dry run are tested here: the rest needs a Cloudflare account).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { npmScript } from "./commands";

const PATH = `${process.cwd()}/node_modules/.bin:${process.env.PATH}`;

function run(script: string, ...args: string[]) {
  const [command, commandArgs] = npmScript(script, ...args);
  return spawnSync(command, commandArgs, {
    encoding: "utf8",
    env: { ...process.env, PATH, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" },
    timeout: 120_000,
  });
}

describe("npm run keys", () => {
  it("prints the Worker's secrets as JSON for wrangler secret bulk, fresh each time", () => {
    const [command, args] = npmScript("keys");
    const first = JSON.parse(execFileSync(command, args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }));
    const second = JSON.parse(execFileSync(command, args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }));
    expect(Object.keys(first)).toEqual(["TOKEN_SIGNING_KEYS", "DATA_PROTECTION_KEY"]);
    const keys = JSON.parse(first.TOKEN_SIGNING_KEYS) as { kty: string; alg: string; kid: string; d?: string }[];
    expect(keys.map((key) => [key.kty, key.alg])).toEqual([
      ["OKP", "EdDSA"],
      ["RSA", "RS256"],
    ]);
    expect(keys.every((key) => key.kid && key.d)).toBe(true);
    expect(first.DATA_PROTECTION_KEY).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(second.DATA_PROTECTION_KEY).not.toBe(first.DATA_PROTECTION_KEY);
    expect(second.TOKEN_SIGNING_KEYS).not.toBe(first.TOKEN_SIGNING_KEYS);
  });
});

describe("npm run deploy:<environment>", () => {
  it("builds the Worker in a dry run and applies nothing", () => {
    const result = run("deploy:staging", "--dry-run");
    expect(result.status).toBe(0);
    expect(result.stdout).toContain("dry run: would apply the pending migrations of staging's database, then deploy");
    // Both Workers, the sign-in Worker first (wrangler.sign-in.toml).
    expect(result.stdout).toContain("Building staging's sign-in Worker (wrangler.sign-in.toml)");
    expect(result.stdout.indexOf("sign-in Worker")).toBeLessThan(result.stdout.indexOf("edge Worker"));
    expect(result.stdout.match(/--dry-run: exiting now\./g)).toHaveLength(2);
  }, 120_000);

  it("builds a placeholder sign-in Worker first for an environment's first deploy (--first)", () => {
    const result = run("deploy:staging", "--dry-run", "--first");
    expect(result.status).toBe(0);
    const placeholder = result.stdout.indexOf("Building a placeholder for staging's sign-in Worker");
    expect(placeholder).toBeGreaterThan(-1);
    expect(placeholder).toBeLessThan(result.stdout.indexOf("Building staging's sign-in Worker"));
    expect(result.stdout.match(/--dry-run: exiting now\./g)).toHaveLength(3);
  }, 120_000);

  it("refuses an environment it does not know, before running anything", () => {
    const [, args] = npmScript("deploy:staging");
    const result = spawnSync(process.execPath, [...args.slice(0, -1), "development"], { encoding: "utf8" });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("usage:");
  });
});

describe("npm run secrets -- <environment>", () => {
  const secrets = (input: string, ...args: string[]) => {
    const [command, commandArgs] = npmScript("secrets", ...args);
    return spawnSync(command, commandArgs, { encoding: "utf8", input, timeout: 60_000 });
  };

  it("refuses an environment it does not know, before reading anything", () => {
    const result = secrets("{}", "development");
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("usage: npm run secrets -- <staging|production>");
  });

  it.each(["not json", "[]", "{}", '{"DATA_PROTECTION_KEY": 7}'])(
    "refuses %j as secrets and stores nothing",
    (input) => {
      const result = secrets(input, "staging");
      expect(result.status).toBe(2);
      expect(result.stderr).toContain("Nothing was stored.");
      expect(result.stdout).not.toContain("Storing");
    },
  );
});
