/**
 * `npm run bench -- --geography`: each sign-in flow's latency for a caller in Oslo, Virginia and
 * Sydney, on the service built with bench/geography.ts (its storage calls wait docs/edge.md's round
 * trips). Each flow runs one request at a time, SAMPLES times per city, from a returning user of a
 * client that signed in from that city before (the steady state issue 28 sets goals for); the
 * figure is the median of the service's answer as Node times it, its CPU included.
 */
import { join } from "node:path";
import demo from "../../../data/demo.json" with { type: "json" };
import { CITIES, type City } from "../../../bench/cities";
import { printTable, type Secrets, seed, startRuntime, workerUrl } from "../bench-runtime";
import { runWrangler } from "../wrangler";
import { median } from "./measure";
import { BASIC, BENCH_CLIENT, FORM } from "./plan";

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 10);
const USER = demo.users[0]!;
const REDIRECT = demo.clients[0]!.redirectUris[0]!;

/** A flow: one timed request per sample (what it needs first, untimed). */
type Flow = { label: string; sample: (caller: Caller) => Promise<number> };

/** Issue 28's goals for Sydney, in milliseconds. */
const SYDNEY_GOALS: Record<string, number> = {
  refresh_token: 350,
  authorization_code: 350,
  "SSO pass-through": 350,
};

/** The two ways the service can be laid out: one Worker at the edge, or split as deployed. */
const LAYOUTS = [
  { label: "one Worker at the edge (local development's layout)", signInWorker: false },
  { label: "the edge Worker and its sign-in Worker (staging's and production's layout)", signInWorker: true },
];

/** Builds the geography entry as wrangler deploys, starts it, and prints each flow's median latency per city. */
export async function benchGeography(work: string, secrets: Secrets): Promise<void> {
  const outdir = join(work, "geography");
  if (
    !(await runWrangler(["deploy", "bench/geography.ts", "--dry-run", "--env", "production", "--outdir", outdir])).ok
  ) {
    throw new Error("wrangler deploy --dry-run of bench/geography.ts failed");
  }
  for (const [index, layout] of LAYOUTS.entries()) {
    const runtime = await startRuntime(
      join(work, `geography-state-${index}`),
      join(outdir, "geography.js"),
      secrets,
      [],
      { signInWorker: layout.signInWorker },
    );
    try {
      await seed(runtime, secrets.DATA_PROTECTION_KEY, [{ ...demo.clients[0]!, ...BENCH_CLIENT, name: "Benchmark" }]);
      await measureCities(await workerUrl(runtime, "service"), layout.label);
    } finally {
      await runtime.dispose();
    }
  }
}

async function measureCities(url: string, layout: string): Promise<void> {
  const cities = Object.keys(CITIES) as City[];
  const figures = new Map<string, number[]>();
  for (const city of cities) {
    const caller = await Caller.returning(url, city);
    for (const flow of FLOWS) {
      const times: number[] = [];
      for (let i = 0; i < SAMPLES; i++) times.push(await flow.sample(caller));
      figures.set(flow.label, [...(figures.get(flow.label) ?? []), median(times)]);
    }
  }
  const rows = FLOWS.map((flow) => {
    const medians = figures.get(flow.label)!;
    const goal = SYDNEY_GOALS[flow.label];
    const sydney = medians[cities.indexOf("sydney")]!;
    return [
      flow.label,
      ...medians.map((ms) => String(Math.round(ms))),
      goal === undefined ? "" : `≤ ${goal}: ${sydney <= goal ? "met" : "not met"}`,
    ];
  });
  console.log(
    `\nGeography, ${layout}: median ms of ${SAMPLES} requests one at a time, hops as docs/edge.md counts them.\n`,
  );
  printTable(["flow", ...cities.map((city) => `${city} ms`), "Sydney goal"], rows);
}

/** A user's browser and their client's server in one city, signed in before. */
class Caller {
  private constructor(
    readonly url: string,
    readonly city: City,
    /** The browser's session cookie (single sign-on). */
    readonly cookie: string,
    /** The client's current refresh token. */
    public refreshToken: string,
  ) {}

  static async returning(url: string, city: City): Promise<Caller> {
    const caller = new Caller(url, city, "", "");
    const signIn = await caller.passwordGrant();
    const cookie = (await caller.logIn(await caller.loginPage())).headers
      .getSetCookie()
      .map((header) => header.split(";")[0]!)
      .find((pair) => /^(?:__Host-)?session=/.test(pair));
    if (!cookie) throw new Error("geography: the login form started no session");
    return new Caller(url, city, cookie, signIn.refresh_token);
  }

  /** The login page's form fields and the CSRF cookie that goes back with them. */
  async loginPage(): Promise<{ fields: Record<string, string>; csrf: string }> {
    const login = await this.send(`/oauth/authorize?${authorizeQuery()}`);
    const page = await login.text();
    const csrf = login.headers
      .getSetCookie()
      .map((cookie) => cookie.split(";")[0]!)
      .join("; ");
    const fields = Object.fromEntries(
      [...page.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)].map(([, n, v]) => [
        n!,
        v!.replace(/&amp;/g, "&"),
      ]),
    );
    return { fields, csrf };
  }

  /** The login form posted with the user's address and password: a session and a code. */
  logIn({ fields, csrf }: { fields: Record<string, string>; csrf: string }): Promise<Response> {
    return this.send(
      "/oauth/authorize",
      {
        method: "POST",
        headers: { "Content-Type": FORM, Cookie: csrf },
        body: new URLSearchParams({ ...fields, action: "login", email: USER.email, password: USER.password! }),
      },
      303,
    );
  }

  /** A request from this city; throws unless it answers `expected`. */
  async send(path: string, init: RequestInit = {}, expected?: number): Promise<Response> {
    const res = await fetch(`${this.url}${path}`, {
      ...init,
      redirect: "manual",
      headers: { ...(init.headers as Record<string, string>), "x-bench-city": this.city },
    });
    if (expected !== undefined && res.status !== expected) {
      throw new Error(`geography: ${path} answered ${res.status}: ${await res.text()}`);
    }
    return res;
  }

  async token(body: Record<string, string>): Promise<{ refresh_token: string }> {
    const res = await this.send(
      "/oauth/token",
      { method: "POST", headers: { Authorization: BASIC, "Content-Type": FORM }, body: new URLSearchParams(body) },
      200,
    );
    return (await res.json()) as { refresh_token: string };
  }

  passwordGrant() {
    return this.token({
      grant_type: "password",
      username: USER.email,
      password: USER.password!,
      redirect_uri: REDIRECT,
    });
  }

  /** An authorization code by single sign-on: the browser's session passes straight through. */
  async code(): Promise<string> {
    const res = await this.send(`/oauth/authorize?${authorizeQuery()}`, { headers: { Cookie: this.cookie } }, 303);
    const code = new URL(res.headers.get("Location")!).searchParams.get("code");
    if (code === null) throw new Error(`geography: no code in ${res.headers.get("Location")}`);
    return code;
  }
}

function authorizeQuery(): string {
  return new URLSearchParams({ client_id: BENCH_CLIENT.id, redirect_uri: REDIRECT, response_type: "code" }).toString();
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

const FLOWS: Flow[] = [
  // The control: no storage call, so every city's figure is the local machine's alone.
  {
    label: "status (no hop)",
    sample: (caller) => timed(() => caller.send("/api/2/status", {}, 200).then((res) => res.text())),
  },
  {
    label: "refresh_token",
    sample: (caller) =>
      timed(async () => {
        caller.refreshToken = (
          await caller.token({ grant_type: "refresh_token", refresh_token: caller.refreshToken })
        ).refresh_token;
      }),
  },
  { label: "SSO pass-through", sample: (caller) => timed(() => caller.code()) },
  {
    label: "authorization_code",
    sample: async (caller) => {
      const code = await caller.code();
      return timed(() => caller.token({ grant_type: "authorization_code", code, redirect_uri: REDIRECT }));
    },
  },
  { label: "password", sample: (caller) => timed(() => caller.passwordGrant()) },
  {
    label: "login form (password)",
    sample: async (caller) => {
      const page = await caller.loginPage();
      return timed(() => caller.logIn(page));
    },
  },
];
