/** Runs the project's wrangler offline: no telemetry, no fetch of the `Request.cf` sample. */
import { type SpawnOptions, spawn, spawnSync } from "node:child_process";

export const OFFLINE_ENV = { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" };

/** Runs wrangler to completion, its errors shown; returns whether it succeeded. */
export function runWrangler(args: string[]): boolean {
  return spawnSync("wrangler", args, { stdio: ["ignore", "ignore", "inherit"], env: OFFLINE_ENV }).status === 0;
}

export function startWrangler(args: string[], options: SpawnOptions = {}) {
  return spawn("wrangler", args, { stdio: "inherit", env: OFFLINE_ENV, ...options });
}
