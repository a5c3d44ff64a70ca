/**
 * The figures only Server-Timing gives, from the service's development twin on the same state:
 * the D1 rows a request reads, and how many calls waited on the client's Durable Object.
 */
import autocannon from "autocannon";
import { fmt } from "../bench-runtime";
import { median, type Route } from "./measure";
import { CONNECTIONS } from "./plan";
import type { Target } from "./workers";

/**
 * A D1 bookmark from the twin's first list (read from D1, so it carries one): sent back, it makes
 * a read skip the isolate's read cache.
 */
export async function firstBookmark(twin: Target, route: Route): Promise<string> {
  const list = await fetch(`${twin.url}/api/2/users?limit=1`, { headers: route.headers(twin) });
  await list.arrayBuffer();
  const bookmark = list.headers.get("x-d1-bookmark");
  if (bookmark === null) throw new Error(`no x-d1-bookmark from the users list: ${list.status}`);
  return bookmark;
}

/**
 * The route over `samples` requests one at a time on the twin, each sent with a bookmark so that
 * it reads D1: the D1 rows one request reads (from the twin's Server-Timing header) and the median
 * round trip, timed to the microsecond here (the Worker's own clock moves in whole milliseconds).
 * One at a time, no request waits behind another, so the median compares data sets without the
 * load's queueing in it. Returns the last bookmark the twin returned.
 */
export async function serverTiming(twin: Target, route: Route, bookmark: string, samples = 200) {
  let rowsRead = "?";
  const roundTrips: number[] = [];
  for (let i = 0; i < samples; i++) {
    const started = performance.now();
    const res = await fetch(`${twin.url}${route.path}`, {
      method: route.method,
      headers: { ...route.headers(twin), "x-d1-bookmark": bookmark },
    });
    await res.arrayBuffer();
    roundTrips.push(performance.now() - started);
    bookmark = res.headers.get("x-d1-bookmark") ?? bookmark;
    const d1 = /(\d+) queries, (\d+) rows read/.exec(res.headers.get("Server-Timing") ?? "");
    if (d1) rowsRead = `${d1[2]} (${d1[1]} queries)`;
  }
  return { rowsRead, p50: median(roundTrips), bookmark };
}

/**
 * The share of the route's calls that waited on the client's Durable Object, under the same load
 * for two seconds, from the twin's Server-Timing header (`do;...;desc="N calls"` or `"1 call"`). Not timed:
 * reading every response's headers costs the load generator.
 */
export async function durableObjectShare(twin: Target, route: Route): Promise<string> {
  let waited = 0;
  let answered = 0;
  let unmeasured = 0;
  await autocannon({
    url: `${twin.url}${route.path}`,
    method: route.method,
    headers: route.headers(twin),
    connections: CONNECTIONS,
    duration: 2,
    requests: [
      {
        onResponse: (_status, _body, _context, headers) => {
          answered += 1;
          // autocannon keeps the names as sent (`Server-Timing`).
          const timing = Object.entries(headers ?? {}).find(([name]) => name.toLowerCase() === "server-timing")?.[1];
          const calls = /do;dur=[\d.]+;desc="(\d+) calls?"/.exec(String(timing ?? ""))?.[1];
          if (calls === undefined) unmeasured += 1;
          else if (Number(calls) > 0) waited += 1;
        },
      },
    ],
  });
  if (unmeasured > 0) throw new Error(`${route.label}: ${fmt(unmeasured)} answers without a Durable Object figure`);
  return `${fmt(waited)} of ${fmt(answered)} (${((100 * waited) / Math.max(answered, 1)).toFixed(2)} %)`;
}
