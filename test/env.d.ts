import type { D1Migration } from "@cloudflare/vitest-pool-workers";
import type { Bindings } from "../src/env";

declare global {
  namespace Cloudflare {
    interface Env extends Bindings {
      TEST_MIGRATIONS: D1Migration[];
      /** What the clients' back-channel logout endpoints received (vitest.config.ts). */
      RECEIVER: Fetcher;
    }
    interface GlobalProps {
      mainModule: typeof import("../src/index");
      durableNamespaces: "RateLimiter";
    }
  }
}
