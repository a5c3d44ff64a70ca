import { drizzle } from "drizzle-orm/d1";

/**
 * The service's queries are built from the tables in schema/; drizzle's relational query API is
 * not used, so the database is opened without a schema map (38 µs per open with one). Even so,
 * opening one on every request cost status 8 % of its throughput in an A/B run, so a request
 * opens its database on first use (env.ts `db`).
 */
export type Database = ReturnType<typeof openDatabase>;

/** A D1 binding, or a session of it (read replication): drizzle asks either only to prepare and batch. */
export function openDatabase(d1: D1Database | D1DatabaseSession) {
  return drizzle(d1 as D1Database);
}

/**
 * A D1 session opened by `open` when the first statement is prepared, so that a request that
 * reads nothing (status, cached reads, the token endpoint's cached clients) opens none; until then
 * it has no bookmark.
 */
export function lazySession(open: () => D1DatabaseSession): D1DatabaseSession {
  let session: D1DatabaseSession | undefined;
  const opened = () => (session ??= open());
  return {
    prepare: (query: string) => opened().prepare(query),
    batch: (statements: D1PreparedStatement[]) => opened().batch(statements),
    getBookmark: () => session?.getBookmark() ?? null,
  } as D1DatabaseSession;
}

/** What one request asked of D1 (Server-Timing, outside production). */
export type D1Usage = {
  queries: number;
  milliseconds: number;
  rowsRead: number;
  rowsWritten: number;
  uncounted: number;
};

export function newD1Usage(): D1Usage {
  return { queries: 0, milliseconds: 0, rowsRead: 0, rowsWritten: 0, uncounted: 0 };
}

type Rows = { read: number; written: number };
const rowsOf = (meta: D1Result["meta"]): Rows => ({ read: meta.rows_read, written: meta.rows_written });

/**
 * The binding with every query counted and timed into `usage`, with the rows read and written that
 * D1's result metadata reports. `raw()` and `first()` results carry no metadata (drizzle reads single
 * selects with `raw()`): those are timed and counted as `uncounted`.
 */
export function measuredD1(d1: D1DatabaseSession, usage: D1Usage): D1DatabaseSession {
  const unwrapped = new WeakMap<object, D1PreparedStatement>();
  async function timed<T>(queries: number, work: () => Promise<T>, rowsOfResult: (result: T) => Rows | null) {
    const started = performance.now();
    try {
      const result = await work();
      const rows = rowsOfResult(result);
      if (rows === null) {
        usage.uncounted += queries;
      } else {
        usage.rowsRead += rows.read;
        usage.rowsWritten += rows.written;
      }
      return result;
    } finally {
      usage.queries += queries;
      usage.milliseconds += performance.now() - started;
    }
  }
  const wrap = (statement: D1PreparedStatement): D1PreparedStatement => {
    const passThrough =
      (method: "raw" | "first") =>
      (...args: unknown[]) =>
        timed(
          1,
          () => (statement[method] as (...a: unknown[]) => Promise<unknown>).apply(statement, args),
          () => null,
        );
    const wrapped = {
      bind: (...values: unknown[]) => wrap(statement.bind(...values)),
      all: () =>
        timed(
          1,
          () => statement.all(),
          (result) => rowsOf(result.meta),
        ),
      run: () =>
        timed(
          1,
          () => statement.run(),
          (result) => rowsOf(result.meta),
        ),
      raw: passThrough("raw"),
      first: passThrough("first"),
    } as unknown as D1PreparedStatement;
    unwrapped.set(wrapped, statement);
    return wrapped;
  };
  return {
    prepare: (query: string) => wrap(d1.prepare(query)),
    batch: (statements: D1PreparedStatement[]) =>
      timed(
        statements.length,
        () => d1.batch(statements.map((statement) => unwrapped.get(statement) ?? statement)),
        (results) =>
          results.reduce(
            (sum, { meta }) => ({ read: sum.read + meta.rows_read, written: sum.written + meta.rows_written }),
            {
              read: 0,
              written: 0,
            },
          ),
      ),
    getBookmark: () => d1.getBookmark(),
  } as unknown as D1DatabaseSession;
}
