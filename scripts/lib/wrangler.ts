/** Runs the project's wrangler offline: no telemetry, no fetch of the `Request.cf` sample. */
import { type SpawnOptions, spawn } from "node:child_process";
import { onStop } from "./on-stop";

export const OFFLINE_ENV = { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" };

export type WranglerRun = { ok: boolean; stderr: string };

/**
 * Runs wrangler to completion, its errors shown as they come; resolves to whether it succeeded and
 * what it wrote on stderr, so a caller can tell a failure it expects. If this process is told to
 * stop meanwhile, wrangler is stopped too.
 */
export async function runWrangler(args: string[]): Promise<WranglerRun> {
  const child = spawn("wrangler", args, { stdio: ["ignore", "ignore", "pipe"], env: OFFLINE_ENV });
  const forget = onStop(() => child.kill("SIGTERM"));
  let stderr = "";
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (part: string) => {
    process.stderr.write(part);
    stderr += part;
  });
  try {
    // "close", not "exit": stderr is read to its end.
    const ok = await new Promise<boolean>((done) => {
      child.once("error", (err) => {
        console.error(`could not run wrangler: ${err.message}`);
        done(false);
      });
      child.once("close", (code) => done(code === 0));
    });
    return { ok, stderr };
  } finally {
    forget();
  }
}

export function startWrangler(args: string[], options: SpawnOptions = {}) {
  return spawn("wrangler", args, { stdio: "inherit", env: OFFLINE_ENV, ...options });
}

/** Runs wrangler with its output shown (the operator's own environment: their login), and resolves to whether it succeeded. */
export function wranglerSucceeds(args: string[]): Promise<boolean> {
  const child = startWrangler(args, { env: process.env });
  return new Promise((done) => {
    child.once("error", () => done(false));
    child.once("exit", (code) => done(code === 0));
  });
}
