/**
 * The service as `npm start` runs it: scripts/start.ts and `wrangler dev` (its proxy in front of
 * the Worker), on a free port and a throw-away state directory, with the demo data loaded.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { OFFLINE_ENV } from "../../scripts/lib/wrangler";
import { npmScript } from "./commands";

export type RunningServer = {
  /** The service's BASE_URL, `http://localhost:<port>` (a passkey needs a host name). */
  base: string;
  /** Everything the server has printed so far (the local mailer prints sign-in links there). */
  output(): string;
  stop(): Promise<void>;
};

async function freePort(): Promise<number> {
  const probe = createServer().listen(0, "127.0.0.1");
  await new Promise((done) => probe.once("listening", done));
  const { port } = probe.address() as { port: number };
  await new Promise((done) => probe.close(done));
  return port;
}

/** Resolves once wrangler says it is ready; `stop` ends the whole process group and removes the state. */
export async function startServer(): Promise<RunningServer> {
  const state = await mkdtemp(join(tmpdir(), "acapi-server-"));
  const port = await freePort();
  const base = `http://localhost:${port}`;
  const server: ChildProcess = spawn(...npmScript("start", "--persist-to", state), {
    env: { ...OFFLINE_ENV, PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  const stop = async () => {
    if (server.pid !== undefined) {
      const exited = server.exitCode === null ? new Promise((done) => server.once("exit", done)) : undefined;
      // The whole process group: wrangler's workerd too, even when npm start itself has died.
      try {
        process.kill(-server.pid, "SIGTERM");
      } catch {
        // Nothing of the group is left.
      }
      await exited;
    }
    await rm(state, { recursive: true, force: true });
  };
  let output = "";
  try {
    await new Promise<void>((ready, fail) => {
      const watch = (part: Buffer) => {
        output += part.toString();
        if (output.includes(`Ready on http://127.0.0.1:${port}`)) ready();
      };
      server.stdout!.on("data", watch);
      server.stderr!.on("data", watch);
      server.once("exit", (code) => fail(new Error(`npm start exited with ${code}:\n${output}`)));
    });
  } catch (err) {
    await stop();
    throw err;
  }
  return { base, output: () => output, stop };
}
