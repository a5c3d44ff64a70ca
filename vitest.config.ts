import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";
import { generateDataProtectionKey, generateSigningKeys } from "./scripts/lib/keys.ts";

/**
 * Five projects: `workers` runs the Worker's tests in the Workers runtime against real local D1,
 * KV and the Durable Object, and `rotation` a data-protection key rotation on storage of its own;
 * `cli` runs the Node-side commands (test/cli) as an operator would; `interop` drives the running
 * server with standard OAuth client libraries; `e2e` drives it with a real browser
 * (`npm run test:e2e`; `npm test` runs the other four).
 */
/**
 * The clients' back-channel logout and callback endpoints, as the outside world the Worker posts
 * to: every outbound request to `*.receiver.test` is kept, and answered 200 (202 where the path
 * says `/callbacks`, as SPiD asks of a callback receiver), 503 where it says `/down` (a client that
 * is down), and 500 to the first N requests where it says `/fail-N/` (a client that recovers). The
 * workers tests read what arrived through the RECEIVER binding (GET: the requests so far).
 * Anything else outbound is refused: tests reach no network.
 */
const received: { url: string; contentType: string | null; body: string }[] = [];

async function outbound(request: Request): Promise<Response> {
  const url = new URL(request.url);
  if (!url.hostname.endsWith(".receiver.test")) return new Response("no network in tests", { status: 502 });
  received.push({ url: request.url, contentType: request.headers.get("Content-Type"), body: await request.text() });
  const failures = Number(/\/fail-(\d+)\//.exec(url.pathname)?.[1] ?? 0);
  const tries = received.filter((earlier) => earlier.url === request.url).length;
  if (url.pathname.includes("/down") || tries <= failures)
    return new Response(null, { status: url.pathname.includes("/down") ? 503 : 500 });
  return new Response(null, { status: url.pathname.includes("/callbacks") ? 202 : 200 });
}

/** A project of Worker tests in the Workers runtime, with local D1, KV, Queues and Durable Objects of its own. */
async function workersProject(name: string, include: string[], exclude: string[] = []) {
  return {
    plugins: [
      cloudflareTest({
        wrangler: { configPath: "./wrangler.toml" },
        miniflare: {
          // Fresh secrets for every run, so no test can lean on a committed key.
          outboundService: outbound,
          serviceBindings: { RECEIVER: () => Response.json(received) },
          bindings: {
            TEST_MIGRATIONS: await readD1Migrations(path.join(import.meta.dirname, "migrations")),
            TOKEN_SIGNING_KEYS: await generateSigningKeys(),
            DATA_PROTECTION_KEY: generateDataProtectionKey(),
            BASE_URL: "https://accounts.test",
            // Callbacks batched over 2 s rather than 300, so that tests see them come.
            CALLBACK_BATCH_SECONDS: "2",
          },
        },
      }),
    ],
    test: { name, include, exclude, setupFiles: ["./test/setup.ts"] },
  };
}

export default defineConfig(async () => {
  return {
    test: {
      projects: [
        await workersProject(
          "workers",
          ["test/**/*.test.ts"],
          ["test/cli/**", "test/interop/**", "test/e2e/**", "test/rotation/**"],
        ),
        // A key rotation rewrites what every client's secrets are sealed under: on a database of its own.
        await workersProject("rotation", ["test/rotation/**/*.test.ts"]),
        {
          test: {
            name: "cli",
            include: ["test/cli/**/*.test.ts"],
            environment: "node",
            // Each case runs wrangler against a throw-away local database.
            testTimeout: 60_000,
            hookTimeout: 60_000,
          },
        },
        {
          test: {
            name: "interop",
            include: ["test/interop/**/*.test.ts"],
            environment: "node",
            testTimeout: 60_000,
            hookTimeout: 60_000,
          },
        },
        {
          // `npm run test:e2e`: needs Chromium (/usr/bin/chromium, or CHROMIUM_PATH).
          test: {
            name: "e2e",
            include: ["test/e2e/**/*.test.ts"],
            environment: "node",
            testTimeout: 60_000,
            hookTimeout: 60_000,
          },
        },
      ],
    },
  };
});
