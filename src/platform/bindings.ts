/**
 * The Worker's bindings with every storage call made through platformCall (calls.ts): D1 (under
 * drizzle and the request's session), KV, the RateLimiter's stubs and the link-request queue. The
 * Worker wraps the env it is handed once (index.ts), so handlers and queries call what they always
 * called, and a test hands it bindings that fail to see what the Worker makes of it.
 */
import type { Bindings } from "../env";
import { platformCall } from "./calls";

const reliable = new WeakMap<Bindings, Bindings>();

/** `env` with its storage bindings wrapped; the same object for the same env (an isolate's is one). */
export function reliableBindings(env: Bindings): Bindings {
  let wrapped = reliable.get(env);
  if (!wrapped) {
    wrapped = {
      ...env,
      DB: reliableD1(env.DB),
      CODES: reliableKV(env.CODES),
      RATE_LIMITER: reliableNamespace(env.RATE_LIMITER),
      LINK_REQUESTS: reliableQueue(env.LINK_REQUESTS),
      LOGOUT_NOTICES: reliableQueue(env.LOGOUT_NOTICES),
    };
    reliable.set(env, wrapped);
  }
  return wrapped;
}

/** A statement that only reads: repeating it changes nothing. */
const READ = /^\s*(select|with)\b/i;

/**
 * Reads are retried; a write is not, since a lost answer does not say whether it was applied:
 * the flows that write make a repeated request safe instead (docs/reliability.md).
 */
function reliableD1(d1: D1Database): D1Database {
  const inner = new WeakMap<object, D1PreparedStatement>();
  const reads = new WeakSet<object>();
  const statement = (real: D1PreparedStatement, read: boolean): D1PreparedStatement => {
    const call = <T>(work: () => Promise<T>) => platformCall("D1", read ? "read" : "write", read, work);
    const wrapped = {
      bind: (...values: unknown[]) => statement(real.bind(...values), read),
      all: () => call(() => real.all()),
      run: () => call(() => real.run()),
      raw: (options?: { columnNames: true }) => call(() => real.raw(options as { columnNames: true })),
      first: (column?: string) => call(() => (column === undefined ? real.first() : real.first(column))),
    } as unknown as D1PreparedStatement;
    inner.set(wrapped, real);
    if (read) reads.add(wrapped);
    return wrapped;
  };
  const prepare = (source: { prepare(query: string): D1PreparedStatement }) => (query: string) =>
    statement(source.prepare(query), READ.test(query));
  const batch = (source: { batch: D1Database["batch"] }) => (statements: D1PreparedStatement[]) => {
    const read = statements.every((s) => reads.has(s));
    return platformCall("D1", read ? "read batch" : "write batch", read, () =>
      source.batch(statements.map((s) => inner.get(s) ?? s)),
    );
  };
  return {
    prepare: prepare(d1),
    batch: batch(d1),
    exec: (query: string) => platformCall("D1", "exec", false, () => d1.exec(query)),
    withSession: (constraint?: string) => {
      const session = d1.withSession(constraint);
      return { prepare: prepare(session), batch: batch(session), getBookmark: () => session.getBookmark() };
    },
    dump: () => d1.dump(),
  } as unknown as D1Database;
}

/** Every KV call is safe to repeat: a get reads, a put of the same value or a delete lands the same. */
function reliableKV(kv: KVNamespace): KVNamespace {
  const call =
    (operation: "get" | "getWithMetadata" | "put" | "delete" | "list") =>
    (...args: unknown[]) =>
      platformCall("KV", operation, true, () => (kv[operation] as (...a: unknown[]) => Promise<unknown>)(...args));
  return {
    get: call("get"),
    getWithMetadata: call("getWithMetadata"),
    put: call("put"),
    delete: call("delete"),
    list: call("list"),
  } as unknown as KVNamespace;
}

function reliableNamespace<T extends Rpc.DurableObjectBranded>(
  namespace: DurableObjectNamespace<T>,
): DurableObjectNamespace<T> {
  return new Proxy(namespace, {
    get(target, name) {
      const member: unknown = Reflect.get(target, name);
      if (typeof member !== "function") return member;
      if (name !== "get") return member.bind(target);
      return (...args: unknown[]) => reliableStub(Reflect.apply(member, target, args) as object);
    },
  });
}

function reliableStub<Stub extends object>(stub: Stub): Stub {
  return new Proxy(stub, {
    get(target, name) {
      const member: unknown = Reflect.get(target, name);
      // `then` stays as it is (a stub is no thenable), and so do symbol-keyed members (dispose).
      if (typeof member !== "function" || typeof name !== "string" || name === "then") return member;
      // Every RateLimiter method is safe to repeat: a one-time value or a password attempt carries
      // its caller's attempt id, so a repeat lands as once; a request or a mailed link counted
      // twice errs towards refusing; a rotation repeated finds its own and is answered in the grace
      // window.
      return (...args: unknown[]) =>
        platformCall("Durable Object", name, true, () => Reflect.apply(member, target, args) as Promise<unknown>);
    },
  });
}

/** A message sent twice is made once: the consumer's link request is refused as too soon the second time. */
function reliableQueue<Body>(queue: Queue<Body>): Queue<Body> {
  return {
    send: (body: Body, options?: QueueSendOptions) =>
      platformCall("Queue", "send", true, () => queue.send(body, options)),
    sendBatch: (messages: Iterable<MessageSendRequest<Body>>, options?: QueueSendBatchOptions) =>
      platformCall("Queue", "sendBatch", true, () => queue.sendBatch(messages, options)),
  } as Queue<Body>;
}
