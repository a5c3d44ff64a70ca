/** What a run of `npm run bench:load` is made of: its length, its connections, its clients and users. */

export const SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 60);
/**
 * Four keep workerd's one thread as busy as ten do (the same requests a second here), with far
 * less waiting in its sockets: at ten, requests wait seconds to be read, and one unread for 5 s is
 * dropped with its connection (docs/benchmarks.md, "Mixed load and its checks").
 */
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 4);
/**
 * Failed password sign-ins an account may have before it is held (from one network, at 5). All
 * of the load comes from one network, which the token endpoint holds after 300 failures in 15
 * minutes: a run of more than about two minutes would see wrong passwords refused with 420.
 */
export const MAX_WRONG_PER_ACCOUNT = 4;
export const FORM = "application/x-www-form-urlencoded";
export const REDIRECT_URI = "https://load.example/callback";
export const PASSWORD = "load-test-password-right";
export const WRONG_PASSWORD = "load-test-password-wrong";
export const FIRST_USER_ID = 200_000;
/** Users signing in with the right password; the first of them also hold the user tokens. */
export const RIGHT_USERS = 40;
export const TOKEN_USERS_PER_CLIENT = 5;
/** Users that only ever get wrong passwords, at most MAX_WRONG_PER_ACCOUNT each. */
export const WRONG_USERS = Math.max(200, SECONDS * 10);

export type ClientSpec = { id: string; secret: string; name: string; quota: number };

/** One client the load cannot exhaust, two it does (per 3,600 s window). */
export const CLIENT_SPECS: ClientSpec[] = [
  { id: "loadbig00000000000000000", secret: "load-client-secret-big-0000", name: "Load: big quota", quota: 10_000_000 },
  { id: "load2000000000000000000", secret: "load-client-secret-2000-000", name: "Load: 2,000 an hour", quota: 2_000 },
  { id: "load300000000000000000", secret: "load-client-secret-300-0000", name: "Load: 300 an hour", quota: 300 },
];

export function loadUserEmail(userId: number): string {
  return `load${userId}@load.example`;
}
