/**
 * The service as a caller in one city meets it, for `npm run bench -- --geography`: the service's
 * own fetch, handed bindings that wait, before each storage call, the round trip docs/edge.md
 * counts for that hop from the city (the D1 primary, the nearest D1 replica, the client's Durable
 * Object, a KV read or write), all of them in Western Europe but the replica. The city is the
 * request's `x-bench-city`; without it nothing waits. Built only by the bench (wrangler's dry run
 * of this entry), never deployed: the service itself has no such wait anywhere.
 *
 * Split as staging and production deploy it, the edge Worker's forward to the sign-in Worker
 * (SIGN_IN) waits the city's round trip to the primary's region, and the sign-in Worker (told by
 * BENCH_PLACED) waits a hop inside that region for each of its calls, whatever the city.
 */
import service, { RateLimiter } from "../src/index";
import type { Bindings } from "../src/env";
import { CITIES, type City, type Hops, NEXT_TO_PRIMARY } from "./cities";

export { RateLimiter };

const wait = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/** A statement that only reads (as platform/bindings.ts tells them). */
const READ = /^\s*(select|with)\b/i;

/**
 * D1 as the city sees it: a call outside a session, or in a `first-primary` one, goes to the
 * primary; in a session that may read a replica (`first-unconstrained`, or a bookmark), a read goes
 * to the nearest replica until the session writes, and a write to the primary.
 */
function distantD1(d1: D1Database, hops: Hops): D1Database {
  const session = (source: D1Database | D1DatabaseSession, replicaReads: boolean) => {
    let wrote = false;
    const hop = (read: boolean) => {
      if (!read) wrote = true;
      return wait(read && replicaReads && !wrote ? hops.replica : hops.primary);
    };
    const inner = new WeakMap<object, D1PreparedStatement>();
    const reads = new WeakMap<object, boolean>();
    const statement = (real: D1PreparedStatement, read: boolean): D1PreparedStatement => {
      const call =
        <T>(work: () => Promise<T>) =>
        async () => {
          await hop(read);
          return work();
        };
      const wrapped = {
        bind: (...values: unknown[]) => statement(real.bind(...values), read),
        all: call(() => real.all()),
        run: call(() => real.run()),
        raw: (options?: { columnNames: true }) => call(() => real.raw(options as { columnNames: true }))(),
        first: (column?: string) => call(() => (column === undefined ? real.first() : real.first(column)))(),
      } as unknown as D1PreparedStatement;
      inner.set(wrapped, real);
      reads.set(wrapped, read);
      return wrapped;
    };
    return {
      prepare: (query: string) => statement(source.prepare(query), READ.test(query)),
      batch: async (statements: D1PreparedStatement[]) => {
        await hop(statements.every((s) => reads.get(s) === true));
        return source.batch(statements.map((s) => inner.get(s) ?? s));
      },
      getBookmark: () => ("getBookmark" in source ? source.getBookmark() : null),
    };
  };
  return {
    ...session(d1, false),
    exec: async (query: string) => {
      await wait(hops.primary);
      return d1.exec(query);
    },
    withSession: (constraint?: string) =>
      session(d1.withSession(constraint), constraint !== undefined && constraint !== "first-primary"),
    dump: () => d1.dump(),
  } as unknown as D1Database;
}

function distantKV(kv: KVNamespace, hops: Hops): KVNamespace {
  const call =
    (operation: "get" | "getWithMetadata" | "put" | "delete" | "list") =>
    async (...args: unknown[]) => {
      await wait(hops.kv);
      return (kv[operation] as (...a: unknown[]) => Promise<unknown>)(...args);
    };
  return {
    get: call("get"),
    getWithMetadata: call("getWithMetadata"),
    put: call("put"),
    delete: call("delete"),
    list: call("list"),
  } as unknown as KVNamespace;
}

/** Every call to a client's Durable Object crosses to where it lives (Western Europe). */
function distantNamespace<T extends Rpc.DurableObjectBranded>(
  namespace: DurableObjectNamespace<T>,
  hops: Hops,
): DurableObjectNamespace<T> {
  const stub = <S extends object>(real: S): S =>
    new Proxy(real, {
      get(target, name) {
        const member: unknown = Reflect.get(target, name);
        if (typeof member !== "function" || typeof name !== "string" || name === "then") return member;
        return async (...args: unknown[]) => {
          await wait(hops.durableObject);
          return Reflect.apply(member, target, args) as Promise<unknown>;
        };
      },
    });
  return new Proxy(namespace, {
    get(target, name) {
      const member: unknown = Reflect.get(target, name);
      if (typeof member !== "function") return member;
      if (name !== "get") return member.bind(target);
      return (...args: unknown[]) => stub(Reflect.apply(member, target, args) as object);
    },
  });
}

/** The sign-in Worker, as far away as the primary's region. */
function distantService(service: Fetcher, hops: Hops): Fetcher {
  return {
    fetch: async (request: Request) => {
      await wait(hops.primary);
      return service.fetch(request);
    },
  } as unknown as Fetcher;
}

/** One wrapped env per handed env and city: the service keeps per-env state (its checked configuration). */
const distant = new WeakMap<Bindings, Map<City, Bindings>>();

function bindingsFrom(env: Bindings, city: City): Bindings {
  const byCity = distant.get(env) ?? new Map<City, Bindings>();
  distant.set(env, byCity);
  let wrapped = byCity.get(city);
  if (!wrapped) {
    const placed = (env as { BENCH_PLACED?: string }).BENCH_PLACED === "1";
    const hops = placed ? NEXT_TO_PRIMARY : CITIES[city];
    wrapped = {
      ...env,
      DB: distantD1(env.DB, hops),
      CODES: distantKV(env.CODES, hops),
      RATE_LIMITER: distantNamespace(env.RATE_LIMITER, hops),
      ...(env.SIGN_IN && { SIGN_IN: distantService(env.SIGN_IN, hops) }),
    };
    byCity.set(city, wrapped);
  }
  return wrapped;
}

export default {
  ...service,
  fetch(request: Request, env: Bindings, ctx: ExecutionContext) {
    const city = request.headers.get("x-bench-city");
    const placed = city !== null && city in CITIES ? bindingsFrom(env, city as City) : env;
    return service.fetch(request, placed, ctx);
  },
} satisfies ExportedHandler<Bindings>;
