/**
 * The platform's documented faults, injected into the bindings handed to the Worker's fetch (the
 * Worker reads its bindings only from the env it is given): D1, KV, the RateLimiter Durable
 * Object and the link-request queue each fail the way Cloudflare documents they do. Nothing is
 * mocked: every call that is not failed goes to the real local binding.
 *
 * A "call" is one storage operation: a D1 statement's run/all/raw/first or a batch; a KV
 * get/getWithMetadata/put/delete/list; one RPC method of a RateLimiter stub; a queue send. Each
 * wrapped binding counts its calls, so that a test can first count a flow's calls on a clean run
 * and then fail each of them in turn.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import worker from "../../src/index";
import type { Bindings } from "../../src/env";
import { BASE } from "./base";

/**
 * - `outage`: every call fails.
 * - `once`: the first call fails, the rest go through (what one retry gets past).
 * - `stall`: every call (from call `from`, 1 unless told) hangs and never answers.
 * - `nth`: call `n` (from 1) fails; `applied` says whether it did its work first (its answer is
 *   lost) or failed before doing anything.
 * - `late`: call `n` stalls for `ms`, then does its work after all: a stall that ends, long after
 *   its caller gave up. `landed` (in the call count) settles once it has.
 */
export type Fault = (
  | { kind: "outage"; error?: () => Error }
  | { kind: "once"; error?: () => Error }
  | { kind: "stall"; from?: number }
  | { kind: "nth"; n: number; applied: boolean; error?: () => Error }
  | { kind: "late"; n: number; ms: number }
) & {
  /** The RateLimiter's RPC methods the fault is for (the others go through, uncounted); all unless told. */
  methods?: string[];
};

export type BindingName = "DB" | "CODES" | "RATE_LIMITER" | "LINK_REQUESTS" | "LOGOUT_NOTICES";

/** The errors as the platform words them (developers.cloudflare.com: D1, Durable Objects, KV). */
export const platformErrors = {
  d1NetworkLost: () => new Error("D1_ERROR: Network connection lost."),
  d1Reset: () => new Error("D1_ERROR: D1 DB storage operation exceeded timeout which caused object to be reset."),
  d1StartUp: () => new Error("D1_ERROR: Internal error while starting up D1 DB storage caused object to be reset."),
  d1Memory: () => new Error("D1_ERROR: D1 DB's isolate exceeded its memory limit and was reset."),
  doNetworkLost: () => Object.assign(new Error("Network connection lost."), { retryable: true }),
  doCodeUpdated: () =>
    Object.assign(new Error("Durable Object reset because its code was updated."), { retryable: true }),
  doOverloaded: () =>
    Object.assign(new Error("Durable Object is overloaded. Too many requests queued."), { overloaded: true }),
  kvFailed: () => new Error("KV GET failed: 500 Internal Server Error"),
  queueFailed: () => new Error("Queue send failed: Internal Server Error"),
};

const DEFAULT_ERRORS: Record<BindingName, () => Error> = {
  DB: platformErrors.d1NetworkLost,
  CODES: platformErrors.kvFailed,
  RATE_LIMITER: platformErrors.doNetworkLost,
  LINK_REQUESTS: platformErrors.queueFailed,
  LOGOUT_NOTICES: platformErrors.queueFailed,
};

/** What a wrapped binding did: calls made (failed ones included) and calls failed. */
export type CallCount = { calls: number; failed: number; landed?: Promise<void> };

/** A faulty env: `env` with the named bindings failing as told, and each binding's call count. */
export function faultyEnv(faults: Partial<Record<BindingName, Fault>>, base: Bindings = env) {
  const counts = {} as Record<BindingName, CallCount>;
  const wrapped: Bindings = { ...base };
  for (const name of ["DB", "CODES", "RATE_LIMITER", "LINK_REQUESTS", "LOGOUT_NOTICES"] as const) {
    const count: CallCount = { calls: 0, failed: 0 };
    counts[name] = count;
    const call = caller(faults[name], DEFAULT_ERRORS[name], count);
    if (name === "DB") wrapped.DB = faultyD1(base.DB, call);
    if (name === "CODES") wrapped.CODES = faultyKV(base.CODES, call);
    if (name === "RATE_LIMITER") wrapped.RATE_LIMITER = faultyNamespace(base.RATE_LIMITER, call, faults[name]?.methods);
    if (name === "LINK_REQUESTS") wrapped.LINK_REQUESTS = faultyQueue(base.LINK_REQUESTS, call);
    if (name === "LOGOUT_NOTICES") wrapped.LOGOUT_NOTICES = faultyQueue(base.LOGOUT_NOTICES, call);
  }
  return { env: wrapped, counts };
}

/** A request to the Worker with `faulty` as its env; waits for what it left running (waitUntil). */
export async function fetchWith(faulty: Bindings, path: string, init: RequestInit = {}) {
  const ctx = createExecutionContext();
  const started = Date.now();
  const response = await worker.fetch(new Request(`${BASE}${path}`, init), faulty, ctx);
  const elapsedMs = Date.now() - started;
  await waitOnExecutionContext(ctx);
  return Object.assign(response, { elapsedMs });
}

type Caller = <T>(work: () => Promise<T>) => Promise<T>;

function caller(fault: Fault | undefined, defaultError: () => Error, count: CallCount): Caller {
  return async (work) => {
    count.calls += 1;
    const n = count.calls;
    if (!fault) return work();
    const fail = (error?: () => Error) => {
      count.failed += 1;
      throw (error ?? defaultError)();
    };
    switch (fault.kind) {
      case "outage":
        return fail(fault.error);
      case "once":
        return n === 1 ? fail(fault.error) : work();
      case "stall":
        if (n < (fault.from ?? 1)) return work();
        count.failed += 1;
        return new Promise<never>(() => {});
      case "nth":
        if (n !== fault.n) return work();
        if (fault.applied) await work();
        return fail(fault.error);
      case "late": {
        if (n !== fault.n) return work();
        count.failed += 1;
        const landing = new Promise((resolve) => setTimeout(resolve, fault.ms)).then(work);
        count.landed = landing.then(
          () => undefined,
          () => undefined,
        );
        return landing;
      }
    }
  };
}

function faultyD1(d1: D1Database, call: Caller): D1Database {
  const real = new WeakMap<object, D1PreparedStatement>();
  const statement = (inner: D1PreparedStatement): D1PreparedStatement => {
    const outer = {
      bind: (...values: unknown[]) => statement(inner.bind(...values)),
      all: () => call(() => inner.all()),
      run: () => call(() => inner.run()),
      raw: (options?: { columnNames?: boolean }) => call(() => inner.raw(options as { columnNames: true })),
      first: (column?: string) => call(() => (column === undefined ? inner.first() : inner.first(column))),
    } as unknown as D1PreparedStatement;
    real.set(outer, inner);
    return outer;
  };
  const unwrap = (statements: D1PreparedStatement[]) => statements.map((s) => real.get(s) ?? s);
  const session = (inner: D1DatabaseSession): D1DatabaseSession =>
    ({
      prepare: (query: string) => statement(inner.prepare(query)),
      batch: (statements: D1PreparedStatement[]) => call(() => inner.batch(unwrap(statements))),
      getBookmark: () => inner.getBookmark(),
    }) as D1DatabaseSession;
  return {
    prepare: (query: string) => statement(d1.prepare(query)),
    batch: (statements: D1PreparedStatement[]) => call(() => d1.batch(unwrap(statements))),
    exec: (query: string) => call(() => d1.exec(query)),
    withSession: (constraint?: string) => session(d1.withSession(constraint)),
    dump: () => d1.dump(),
  } as unknown as D1Database;
}

function faultyKV(kv: KVNamespace, call: Caller): KVNamespace {
  return {
    get: (...args: unknown[]) => call(() => (kv.get as (...a: unknown[]) => Promise<unknown>)(...args)),
    getWithMetadata: (...args: unknown[]) =>
      call(() => (kv.getWithMetadata as (...a: unknown[]) => Promise<unknown>)(...args)),
    put: (...args: Parameters<KVNamespace["put"]>) => call(() => kv.put(...args)),
    delete: (key: string) => call(() => kv.delete(key)),
    list: (options?: KVNamespaceListOptions) => call(() => kv.list(options)),
  } as unknown as KVNamespace;
}

function faultyNamespace<T extends Rpc.DurableObjectBranded>(
  namespace: DurableObjectNamespace<T>,
  call: Caller,
  methods: string[] | undefined,
): DurableObjectNamespace<T> {
  return new Proxy(namespace, {
    get(target, name) {
      const member: unknown = Reflect.get(target, name);
      if (name !== "get" || typeof member !== "function") {
        return typeof member === "function" ? member.bind(target) : member;
      }
      return (...args: unknown[]) => faultyStub(Reflect.apply(member, target, args) as object, call, methods);
    },
  });
}

function faultyStub<Stub extends object>(stub: Stub, call: Caller, methods: string[] | undefined): Stub {
  return new Proxy(stub, {
    get(target, name) {
      const member: unknown = Reflect.get(target, name);
      if (typeof member !== "function" || typeof name !== "string" || name === "then") return member;
      if (methods && !methods.includes(name)) return (...args: unknown[]) => Reflect.apply(member, target, args);
      return (...args: unknown[]) => call(() => Reflect.apply(member, target, args) as Promise<unknown>);
    },
  });
}

function faultyQueue<Body>(queue: Queue<Body>, call: Caller): Queue<Body> {
  return {
    send: (body: Body, options?: QueueSendOptions) => call(() => queue.send(body, options)),
    sendBatch: (messages: Iterable<MessageSendRequest<Body>>, options?: QueueSendBatchOptions) =>
      call(() => queue.sendBatch(messages, options)),
  } as Queue<Body>;
}
