import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";
import { generateDataProtectionKey, generateSigningKeys } from "./scripts/lib/keys.ts";

export default defineConfig(async () => {
  const migrations = await readD1Migrations(path.join(import.meta.dirname, "migrations"));
  return {
    plugins: [
      cloudflareTest({
        wrangler: { configPath: "./wrangler.toml" },
        miniflare: {
          // Fresh secrets for every run, so no test can lean on a committed key.
          bindings: {
            TEST_MIGRATIONS: migrations,
            TOKEN_SIGNING_KEYS: await generateSigningKeys(),
            DATA_PROTECTION_KEY: generateDataProtectionKey(),
            BASE_URL: "https://accounts.test",
          },
        },
      }),
    ],
    test: {
      setupFiles: ["./test/setup.ts"],
    },
  };
});
