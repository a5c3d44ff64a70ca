import { monitorEventLoopDelay } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";

export type Stalls = { probeMs: number; probeAt: number; slowProbes: number; nodeMs: number };

/**
 * Watches for stalls while the load runs: the round trip of GET /api/2/status (counted nowhere)
 * on a connection of its own every 100 ms, and this process's event-loop delay. workerd serves
 * the Worker, D1 and the Durable Objects on one thread: a stall of 5 s there makes its HTTP
 * server close the connections whose next request it has not read yet (kj's pipeline timeout),
 * and those requests are never answered; these figures tell such a stall from the Worker's own
 * failures.
 */
export function watchStalls(url: string): { stop(): Promise<Stalls> } {
  const loop = monitorEventLoopDelay({ resolution: 20 });
  loop.enable();
  const started = performance.now();
  let running = true;
  let probeMs = 0;
  let probeAt = 0;
  let slowProbes = 0;
  const probing = (async () => {
    while (running) {
      const sent = performance.now();
      try {
        await (await fetch(`${url}/api/2/status`)).arrayBuffer();
      } catch {
        // A failed probe is as slow as its wait.
      }
      const ms = performance.now() - sent;
      if (ms > 1_000) slowProbes += 1;
      if (ms > probeMs) [probeMs, probeAt] = [ms, (sent - started) / 1000];
      await sleep(100);
    }
  })();
  return {
    async stop() {
      running = false;
      await probing;
      loop.disable();
      return { probeMs, probeAt, slowProbes, nodeMs: loop.max / 1e6 };
    },
  };
}
