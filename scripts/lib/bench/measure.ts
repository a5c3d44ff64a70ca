/**
 * How a route is measured: autocannon's requests/s and latencies, and workerd's CPU a request,
 * on the service and on the baseline in alternating rounds.
 */
import autocannon from "autocannon";
import { CONNECTIONS, ROUNDS, SECONDS } from "./plan";
import type { Target } from "./workers";

export type Route = {
  label: string;
  method: "GET" | "POST";
  path: string;
  body?: string;
  headers: (t: Target) => Record<string, string>;
  /** Requests that change as the load runs, for the service (the baseline gets the fixed ones). */
  requests?: autocannon.Request[];
  /** Work before the route is loaded, outside the timed part. */
  before?: (service: Target) => Promise<void>;
  /** Admitted by the client's rate limiter: the bench reports how many calls waited on its Durable Object. */
  authenticated?: boolean;
};

/** `cpuPerRequest`: workerd's CPU over the run divided by the requests answered, in µs (null without /proc). */
export type Result = {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  cpuPerRequest: number | null;
};
/**
 * `ratio` of requests a second and `cpuRatio` of workerd CPU a request (the baseline's over the
 * service's), each the rounds' median.
 */
export type Comparison = { service: Result; baseline: Result; ratio: number; cpuRatio: number | null };

export class LoadMeter {
  /** `workerdCpu`: the workerd process's CPU so far (µs), where /proc has it (workerdCpuReader). */
  constructor(private readonly workerdCpu: (() => number) | null) {}

  /**
   * The route on the service and on the baseline: one second of warm-up on each (isolate start, key
   * import, caches), then ROUNDS rounds of SECONDS / ROUNDS on each in turn. Requests/s over all
   * rounds; p50, p99 and the ratio are the rounds' medians.
   */
  async compare(service: Target, baseline: Target, route: Route): Promise<Comparison> {
    for (const target of [service, baseline]) await this.load(target, route, 1);
    const rounds: [Result, Result][] = [];
    for (let round = 0; round < ROUNDS; round++) {
      rounds.push([
        await this.load(service, route, SECONDS / ROUNDS),
        await this.load(baseline, route, SECONDS / ROUNDS),
      ]);
    }
    return {
      service: summary(rounds.map(([s]) => s)),
      baseline: summary(rounds.map(([, b]) => b)),
      ratio: median(rounds.map(([s, b]) => s.requestsPerSecond / b.requestsPerSecond)),
      cpuRatio: rounds.some(([s, b]) => s.cpuPerRequest === null || b.cpuPerRequest === null)
        ? null
        : median(rounds.map(([s, b]) => b.cpuPerRequest! / s.cpuPerRequest!)),
    };
  }

  async load(target: Target, route: Route, seconds: number): Promise<Result> {
    const cpuBefore = this.workerdCpu?.();
    const result = await autocannon({
      url: `${target.url}${route.path}`,
      method: route.method,
      headers: route.headers(target),
      body: route.body,
      connections: CONNECTIONS,
      duration: seconds,
      ...(route.requests && target.name !== "baseline" && { requests: route.requests }),
    });
    return {
      requestsPerSecond: result.requests.total / result.duration,
      p50: result.latency.p50,
      p99: result.latency.p99,
      non2xx: result.non2xx,
      cpuPerRequest:
        cpuBefore === undefined || result.requests.total === 0
          ? null
          : (this.workerdCpu!() - cpuBefore) / result.requests.total,
    };
  }
}

export function median(values: number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
}

function summary(results: Result[]): Result {
  return {
    requestsPerSecond: results.reduce((sum, r) => sum + r.requestsPerSecond, 0) / results.length,
    p50: median(results.map((r) => r.p50)),
    p99: median(results.map((r) => r.p99)),
    non2xx: results.reduce((sum, r) => sum + r.non2xx, 0),
    cpuPerRequest: results.some((r) => r.cpuPerRequest === null) ? null : median(results.map((r) => r.cpuPerRequest!)),
  };
}
