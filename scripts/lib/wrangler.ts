/** Runs the project's wrangler offline: no telemetry, no fetch of the `Request.cf` sample. */
import { type SpawnOptions, spawn } from "node:child_process";
import { onStop } from "./on-stop";

export const OFFLINE_ENV = { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" };

/**
 * Runs wrangler to completion, its errors shown; resolves to whether it succeeded. If this process
 * is told to stop meanwhile, wrangler is stopped too.
 */
export async function runWrangler(args: string[]): Promise<boolean> {
  const child = spawn("wrangler", args, { stdio: ["ignore", "ignore", "inherit"], env: OFFLINE_ENV });
  const forget = onStop(() => child.kill("SIGTERM"));
  try {
    return await new Promise<boolean>((done) => {
      child.once("error", (err) => {
        console.error(`could not run wrangler: ${err.message}`);
        done(false);
      });
      child.once("exit", (code) => done(code === 0));
    });
  } finally {
    forget();
  }
}

export function startWrangler(args: string[], options: SpawnOptions = {}) {
  return spawn("wrangler", args, { stdio: "inherit", env: OFFLINE_ENV, ...options });
}
