/**
 * `npm run db:import` and the DATA_PROTECTION_KEY: the first import records the key's fingerprint,
 * and an import under another key is refused whole (migration 0011's trigger), against a throw-away
 * local D1 as in import.test.ts.
 */
import { describe, expect, it } from "vitest";
import { generateDataProtectionKey } from "../../scripts/lib/keys";
import { localDatabase } from "./local-database";

const { importFile, query, writeJson } = localDatabase("import-key-test");

const merchantsFile = (name: string, merchantId: number) => writeJson(name, { merchants: [{ merchantId, name }] });

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
