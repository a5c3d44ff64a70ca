/**
 * The load itself: SECONDS of the request mix over CONNECTIONS connections with autocannon, then
 * a drain until every request of the load has been answered, with stalls watched throughout.
 */
import { setTimeout as sleep } from "node:timers/promises";
import autocannon from "autocannon";
import { RequestMix } from "./mix";
import { CONNECTIONS, SECONDS } from "./plan";
import type { LoadClient } from "./setup";
import { type Stalls, watchStalls } from "./stalls";
import { LoadTally } from "./tally";

export type LoadOutcome = {
  tally: LoadTally;
  result: autocannon.Result;
  /** performance.now() when the load started. */
  started: number;
  /** Seconds from the start to the last answer. */
  elapsed: number;
  /** Requests of the load never answered. */
  lost: number;
  stalls: Stalls;
  wrongPoolExhausted: number;
};

export async function runLoad(url: string, clients: LoadClient[]): Promise<LoadOutcome> {
  const mix = new RequestMix(clients);
  const tally = new LoadTally();
  const setupRequest = (request: autocannon.Request, context: object): autocannon.Request => {
    const item = mix.next();
    Object.assign(context, { item, started: performance.now() });
    tally.recordSent(context);
    return { ...request, method: item.method, path: item.path, headers: item.headers, body: item.body ?? "" };
  };
  const onResponse = (status: number, body: string, context: object) => tally.recordAnswer(status, body, context);

  const started = performance.now();
  const stalls = watchStalls(url);
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url,
        connections: CONNECTIONS,
        // Stopped by hand below, once every request of the load has been answered.
        duration: SECONDS + 3600,
        requests: [{ setupRequest, onResponse }],
      },
      (error, answer) => (error ? reject(error) : resolve(answer)),
    );
    void (async () => {
      await sleep(SECONDS * 1000);
      // From now on the connections ask only for the status, which nothing counts, so that no
      // request of the load is left unanswered when autocannon stops (it drops what is in flight).
      mix.draining = true;
      const drainStarted = performance.now();
      while (tally.inFlight > 0 && performance.now() - drainStarted < 30_000) await sleep(10);
      instance.stop();
    })();
  });
  return {
    tally,
    result,
    started,
    elapsed: (tally.lastAnswer - started) / 1000,
    lost: tally.inFlight,
    stalls: await stalls.stop(),
    wrongPoolExhausted: mix.wrongPoolExhausted,
  };
}
