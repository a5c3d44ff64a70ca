/** `npm start`'s local secrets (.dev.vars): written once, and given the RSA key ID tokens need. */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ensureDevVars, readDevVars } from "../../scripts/lib/dev-vars";
import { generateSigningKey } from "../../scripts/lib/keys";

let home: string;
let directory: string;

beforeEach(async () => {
  home = process.cwd();
  directory = await mkdtemp(join(tmpdir(), "acapi-dev-vars-"));
  process.chdir(directory);
});

afterEach(async () => {
  process.chdir(home);
  await rm(directory, { recursive: true, force: true });
});

const keysOf = async () => JSON.parse((await readDevVars()).TOKEN_SIGNING_KEYS!) as { kty: string; kid: string }[];

describe("ensureDevVars", () => {
  it("writes fresh secrets: an Ed25519 and an RSA signing key, and a data-protection key", async () => {
    expect(await ensureDevVars()).toContain("Wrote .dev.vars");
    expect((await keysOf()).map((key) => key.kty)).toEqual(["OKP", "RSA"]);
    expect((await readDevVars()).DATA_PROTECTION_KEY).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await ensureDevVars()).toBeNull();
  });

  it("adds an RSA key to a .dev.vars from before OpenID Connect, keeping everything else", async () => {
    const ed25519 = await generateSigningKey("EdDSA");
    const before = `# mine\nTOKEN_SIGNING_KEYS='${JSON.stringify([ed25519])}'\nDATA_PROTECTION_KEY=kept\n`;
    await writeFile(".dev.vars", before);
    expect(await ensureDevVars()).toContain("Added an RSA signing key");
    const keys = await keysOf();
    expect(keys[0]).toEqual(ed25519);
    expect(keys.map((key) => key.kty)).toEqual(["OKP", "RSA"]);
    const after = await readFile(".dev.vars", "utf8");
    expect(after).toContain("# mine\n");
    expect(after).toContain("DATA_PROTECTION_KEY=kept\n");
    expect(await ensureDevVars()).toBeNull();
  });
});
