/** What a run of `npm run bench` is made of: its load, its rounds and its client. */

export const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
/** BENCH_ROUTES (comma-separated words): only the routes whose label has one of them; all unless set. */
export const ROUTE_FILTER = process.env.BENCH_ROUTES?.split(",").filter((word) => word !== "") ?? [];
/**
 * A route's BENCH_SECONDS per worker are split into this many rounds, service then baseline in
 * each, so that a change in the machine's other load falls on both; the ratio is the rounds' median.
 */
export const ROUNDS = 3;
export const BENCH_CLIENT = { id: "bench0000000000000000000", secret: "bench-client-secret-0000000000" };
export const BASIC = basicOf(BENCH_CLIENT);
/** The benchmark client's twin with persistent refresh tokens (`refreshTokenRotation: false`). */
export const PERSISTENT_BENCH_CLIENT = { id: "bench0000000000000000001", secret: "bench-client-secret-0000000001" };
export const PERSISTENT_BASIC = basicOf(PERSISTENT_BENCH_CLIENT);

function basicOf({ id, secret }: { id: string; secret: string }): string {
  return `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`;
}
export const FORM = "application/x-www-form-urlencoded";
