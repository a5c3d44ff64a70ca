/** The tables `npm run bench` prints: the routes against the baseline, the user searches, and the bundle's size. */
import { readFile } from "node:fs/promises";
import { gzipSync } from "node:zlib";
import { fmt, printTable } from "../bench-runtime";
import type { Result } from "./measure";
import type { RouteFigures } from "./routes";
import type { UserSearchFigures } from "./user-search";

export function printRouteTable(figures: RouteFigures[]): void {
  printTable(
    [
      "route",
      "service req/s",
      "p50/p99 ms",
      "baseline req/s",
      "p50/p99 ms",
      "ratio",
      "CPU ratio (µs a request, medians)",
      "waited on the DO",
      "",
    ],
    figures.map(({ label, comparison: { service: s, baseline: b, ratio, cpuRatio }, share }) => [
      label,
      fmt(s.requestsPerSecond),
      `${s.p50} / ${s.p99}`,
      fmt(b.requestsPerSecond),
      `${b.p50} / ${b.p99}`,
      ratio.toFixed(2),
      cpuColumn(s, b, cpuRatio),
      share,
      s.non2xx + b.non2xx > 0 ? `non-2xx: ${s.non2xx}/${b.non2xx}` : "",
    ]),
  );
}

/** The searches' table, then how each search's p50 one at a time changed from the smaller data set to the larger. */
export function printUserSearchTable(figures: UserSearchFigures[]): void {
  console.log("");
  printTable(
    [
      "route",
      "users",
      "service req/s",
      "p50/p99 ms",
      "ratio",
      "CPU ratio (µs a request, medians)",
      "req/s from D1 (ratio)",
      "p50 alone ms",
      "D1 rows read/request",
      "waited on the DO",
      "",
    ],
    figures.map(({ label, users, comparison: { service: s, baseline: b, ratio, cpuRatio }, fromD1, alone, share }) => [
      label,
      fmt(users),
      fmt(s.requestsPerSecond),
      `${s.p50} / ${s.p99}`,
      ratio.toFixed(2),
      cpuColumn(s, b, cpuRatio),
      `${fmt(fromD1.requestsPerSecond)} (${(fromD1.requestsPerSecond / b.requestsPerSecond).toFixed(2)})`,
      alone.p50.toFixed(2),
      alone.rowsRead,
      share,
      s.non2xx + fromD1.non2xx > 0 ? `non-2xx: ${s.non2xx}/${fromD1.non2xx}` : "",
    ]),
  );
  const p50s = new Map<string, number[]>();
  for (const { label, alone } of figures) p50s.set(label, [...(p50s.get(label) ?? []), alone.p50]);
  for (const [label, [small, large]] of p50s) {
    const change = ((large! / small! - 1) * 100).toFixed(0);
    console.log(
      `p50 one at a time, ${label}: ${small!.toFixed(2)} ms at 1,000 users, ${large!.toFixed(2)} ms at 100,000 (${change} %)`,
    );
  }
}

export async function printBundleSize(serviceScript: string): Promise<void> {
  const bundleBytes = await readFile(serviceScript);
  console.log(
    `\nBundle (wrangler deploy --dry-run --outdir): ${kib(bundleBytes.length)} KiB, gzip ${kib(gzipSync(bundleBytes).length)} KiB`,
  );
}

/**
 * The CPU ratio (the rounds' median) with each worker's µs a request beside it (service /
 * baseline, each its own median over the rounds, so they need not divide to the ratio exactly);
 * "-" without /proc.
 */
function cpuColumn(service: Result, baseline: Result, cpuRatio: number | null): string {
  if (cpuRatio === null || service.cpuPerRequest === null || baseline.cpuPerRequest === null) return "-";
  return `${cpuRatio.toFixed(2)} (${service.cpuPerRequest.toFixed(0)} / ${baseline.cpuPerRequest.toFixed(0)})`;
}

function kib(bytes: number): string {
  return (bytes / 1024).toFixed(1);
}
