/**
 * User searches on 1,000 and on 100,000 generated users (imported outside the timed part), as
 * callers without a bookmark get them (mostly from the isolate's read cache) and with one (from
 * D1), with the D1 rows each request reads (from the twin's Server-Timing header).
 */
import type { Miniflare } from "miniflare";
import { fmt, importScript } from "../bench-runtime";
import type { Comparison, LoadMeter, Result, Route } from "./measure";
import { BENCH_CLIENT, SECONDS } from "./plan";
import { durableObjectShare, firstBookmark, serverTiming } from "./twin-figures";
import type { Target, Targets } from "./workers";

const BENCH_USER_FIRST_ID = 100_000;
/** The user the searches look for: present in both data sets. */
const SEARCHED_USER = 500;

/** A search route at one data set size: loaded, loaded with a bookmark (from D1), and one at a time on the twin. */
export type UserSearchFigures = {
  label: string;
  users: number;
  comparison: Comparison;
  fromD1: Result;
  /** One request at a time on the twin: its median round trip (ms) and the D1 rows it read. */
  alone: { p50: number; rowsRead: string };
  share: string;
};

export async function benchUserSearch(
  runtime: Miniflare,
  dataProtectionKey: string,
  meter: LoadMeter,
  { service, baseline, twin }: Targets,
): Promise<UserSearchFigures[]> {
  const figures: UserSearchFigures[] = [];
  /** The last bookmark the twin returned: sent back, it makes a read skip the isolate's read cache. */
  let bookmark: string | null = null;
  for (const [users, from] of [
    [1_000, 0],
    [100_000, 1_000],
  ] as const) {
    const started = performance.now();
    await importBenchUsers(runtime, dataProtectionKey, from, users);
    console.log(
      `\nImported users ${fmt(from + 1)}-${fmt(users)} in ${((performance.now() - started) / 1000).toFixed(1)} s.`,
    );
    for (const route of userRoutes()) {
      bookmark ??= await firstBookmark(twin, route);
      const alone = await serverTiming(twin, route, bookmark);
      bookmark = alone.bookmark;
      const comparison = await meter.compare(service, baseline, route);
      // The same load with a bookmark: every request reads D1, none the isolate's read cache.
      const bookmarked = {
        ...route,
        headers: (t: Target) => ({ ...route.headers(t), "x-d1-bookmark": alone.bookmark }),
      };
      const fromD1 = await meter.load(service, bookmarked, SECONDS);
      const share = await durableObjectShare(twin, route);
      figures.push({ label: route.label, users, comparison, fromD1, alone, share });
    }
  }
  return figures;
}

function userRoutes(): Route[] {
  const bearer = (t: Target) => ({ Authorization: `Bearer ${t.serverToken}` });
  return [
    {
      label: "GET /api/2/users?limit=100",
      method: "GET",
      path: "/api/2/users?limit=100",
      headers: bearer,
      authenticated: true,
    },
    {
      label: "GET /api/2/users?email=...",
      method: "GET",
      path: `/api/2/users?email=user${SEARCHED_USER}@bench.example`,
      headers: bearer,
      authenticated: true,
    },
    {
      label: "GET /api/2/user/{id}",
      method: "GET",
      path: `/api/2/user/${BENCH_USER_FIRST_ID + SEARCHED_USER}`,
      headers: bearer,
      authenticated: true,
    },
  ];
}

/** Generated users `from + 1` to `to`, connected to the benchmark client, imported in batches. */
async function importBenchUsers(mf: Miniflare, dataProtectionKey: string, from: number, to: number) {
  const givenNames = ["Ingrid", "Erik", "Kari", "Ola", "Åse", "Nils", "Sofie", "Jonas"];
  const familyNames = ["Hansen", "Johansen", "Olsen", "Larsen", "Andersen", "Pedersen", "Nilsen", "Kristiansen"];
  const BATCH = 1_000;
  for (let start = from + 1; start <= to; start += BATCH) {
    const users = [];
    for (let n = start; n < Math.min(start + BATCH, to + 1); n++) {
      users.push({
        userId: String(BENCH_USER_FIRST_ID + n),
        uuid: `00000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}`,
        status: n % 10 === 0 ? 0 : n % 97 === 0 ? -1 : 1,
        email: `user${n}@bench.example`,
        name: { givenName: givenNames[n % givenNames.length], familyName: familyNames[(n >> 3) % familyNames.length] },
        published: 1_600_000_000 + n * 60,
        updated: 1_700_000_000 + n * 60,
        clients: [BENCH_CLIENT.id],
      });
    }
    // One script a batch: through Miniflare's proxy each prepared statement would be a round trip.
    await importScript(mf, { users }, dataProtectionKey);
  }
}
