/** The figures of a load run, as `npm run bench:load` prints them, and its checks' verdicts. */
import { fmt, printTable } from "../bench-runtime";
import type { Check, ClientCount } from "./checks";
import type { LoadOutcome } from "./load";
import { type Kind, KINDS } from "./mix";
import type { Stalls } from "./stalls";

/** Requests answered per second, overall and per kind, with their latencies and statuses. */
export function printLoadFigures({ tally, result, elapsed, lost }: LoadOutcome): void {
  const answered = tally.answered;
  console.log(
    `\n${fmt(answered)} requests answered in ${elapsed.toFixed(1)} s: ${fmt(answered / elapsed)} req/s ` +
      `(autocannon: ${fmt(result.errors)} errors, ${fmt(result.timeouts)} timeouts; ${fmt(lost)} unanswered).\n`,
  );
  printTable(
    ["kind", "requests", "req/s", "p50 ms", "p99 ms", "statuses"],
    KINDS.map((kind) => {
      const s = tally.stats.get(kind)!;
      const sorted = [...s.latencies].sort((a, b) => a - b);
      return [
        kindLabel(kind),
        fmt(s.latencies.length),
        fmt(s.latencies.length / elapsed),
        percentile(sorted, 0.5),
        percentile(sorted, 0.99),
        [...s.statuses]
          .sort(([a], [b]) => a - b)
          .map(([status, count]) => `${status}: ${fmt(count)}`)
          .join(", "),
      ];
    }),
  );
}

export function printStalls(stalls: Stalls): void {
  console.log(
    `\nLongest wait for GET /api/2/status on a connection of its own, every 100 ms during the load: ` +
      `${fmt(stalls.probeMs)} ms at ${stalls.probeAt.toFixed(1)} s (${stalls.slowProbes} over 1 s); ` +
      `longest delay of this Node process's event loop: ${fmt(stalls.nodeMs)} ms.`,
  );
}

/** Per client: its API calls, how many were admitted and refused, and what its Durable Object counted. */
export function printClientCounts(counts: ClientCount[]): void {
  console.log("");
  printTable(
    ["client", "API calls", "admitted (2xx)", "refused (420)", "Durable Object counted", "quota", "quota reached"],
    counts.map(({ client, counted, count, leases }) => [
      client.name,
      fmt(client.sent),
      fmt(client.admitted),
      fmt(client.refused),
      `${fmt(counted)} (count ${fmt(count)}, ${leases.length} lease${leases.length === 1 ? "" : "s"} held)`,
      fmt(client.quota),
      client.refused > 0 ? "yes" : "no",
    ]),
  );
}

export function printWrongPoolNote(wrongPoolExhausted: number): void {
  if (wrongPoolExhausted === 0) return;
  console.log(
    `\nNote: ${fmt(wrongPoolExhausted)} wrong passwords were sent as right ones: the wrong-password users ran out.`,
  );
}

export function printChecks(checks: Check[]): void {
  console.log("");
  for (const check of checks) console.log(`${check.ok ? "PASS" : "FAIL"}  ${check.name}: ${check.detail}`);
}

function percentile(sorted: number[], p: number): string {
  if (sorted.length === 0) return "-";
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!.toFixed(1);
}

function kindLabel(kind: Kind): string {
  return {
    token: "POST /oauth/token client_credentials",
    clients: "GET /api/2/clients (server token)",
    me: "GET /api/2/me (user token)",
    users: "GET /api/2/users?limit=10 (server token)",
    devices: "POST /api/2/devices (user token)",
    password: "POST /oauth/token password",
    "password, wrong": "POST /oauth/token password, wrong one",
  }[kind];
}
