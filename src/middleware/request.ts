/** The request pipeline every request passes first (order set in app.ts). */
import type { HonoRequest } from "hono";
import { createMiddleware } from "hono/factory";
import { type Database, lazySession, measuredD1, newD1Usage, openDatabase } from "../db/client";
import type { AppEnv, RequestTiming } from "../env";
import { ApiError } from "../errors";
import { formText, utf8Url } from "../http/encoding";
import { formatOf, pathnameOf } from "../http/format";
import { isForm } from "../http/media-type";

/** Form posts here are a few hundred bytes; anything near this limit is not a real client. */
export const MAX_BODY_BYTES = 64 * 1024;

/** Every response, bare OAuth bodies and the JWKS included, is only ever what its Content-Type says. */
export const noSniff = createMiddleware<AppEnv>(async (c, next) => {
  await next();
  c.res.headers.set("X-Content-Type-Options", "nosniff");
});

/**
 * Reads each request body before anything else runs, keeping at most MAX_BODY_BYTES; a larger one
 * is refused with 413. At the edge a body declared too large is refused unread and one that grows
 * too large is dropped there. Locally the refused body is first read to its end: `wrangler dev`'s
 * proxy dies when the Worker answers before consuming a body (workers-sdk #15203). A GET or HEAD
 * that carries a body has it read and dropped (it means nothing here). The bytes read are handed to
 * Hono's body cache; only a request whose query must be made UTF-8 (http/encoding.ts) is rebuilt.
 */
export const readRequest = createMiddleware<AppEnv>(async (c, next) => {
  const { body, method } = c.req.raw;
  let bytes: Uint8Array | null = null;
  if (body !== null) {
    const drainRefused = c.env.ENVIRONMENT === "development";
    const declared = Number(c.req.header("Content-Length") ?? NaN);
    if (declared <= MAX_BODY_BYTES) {
      // The runtime holds the body to its declared length: one native read, no chunk loop.
      bytes = await readDeclared(c.req.raw);
    } else {
      const refuseUnread = declared > MAX_BODY_BYTES && !drainRefused;
      bytes = refuseUnread ? null : await readAtMost(body, MAX_BODY_BYTES, drainRefused);
    }
    if (bytes === null) {
      if (!body.locked) await body.cancel();
      throw new ApiError(413, "invalid_request", `The request body is larger than ${MAX_BODY_BYTES} bytes`);
    }
  }
  const read = method === "GET" || method === "HEAD" ? null : bytes;
  if (read) keepBody(c.req, read);
  const url = utf8Url(c.req.url);
  // The body, if any, is read already: it lives on in Hono's body cache, which the copy keeps.
  if (url) c.req.raw = new Request(url, { method, headers: c.req.raw.headers });
  await next();
});

/**
 * Hands the bytes read to Hono's body readers (validators, `c.req.text()`) through its body cache,
 * which holds each read's promise whatever its declared type says. A form is read once, here, for
 * all of them (http/encoding.ts `formText`): its text and fields are cached beside the bytes, so
 * the runtime's own form parser, which reads some bodies differently, never runs.
 */
function keepBody(request: HonoRequest, bytes: Uint8Array): void {
  const cache = request.bodyCache as {
    arrayBuffer?: Promise<ArrayBuffer>;
    text?: Promise<string>;
    formData?: Promise<FormData>;
  };
  // First: Hono converts from the first cached body for any type not cached.
  cache.arrayBuffer = Promise.resolve(bytes.buffer as ArrayBuffer);
  if (!isForm(request.header("Content-Type"))) return;
  const text = formText(bytes);
  const form = new FormData();
  for (const [name, value] of new URLSearchParams(text)) form.append(name, value);
  cache.text = Promise.resolve(text);
  cache.formData = Promise.resolve(form);
}

async function readDeclared(request: Request): Promise<Uint8Array> {
  try {
    return new Uint8Array(await request.arrayBuffer());
  } catch {
    throw unreadable();
  }
}

const unreadable = () => new ApiError(400, "invalid_request", "The request body could not be read to its end");

/**
 * The stream's bytes, or null once there are more than `limit`; the rest is then read and dropped
 * (`drainRest`) or cancelled.
 */
async function readAtMost(
  stream: ReadableStream<Uint8Array>,
  limit: number,
  drainRest: boolean,
): Promise<Uint8Array | null> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = stream.getReader();
  try {
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      size += chunk.value.byteLength;
      if (size <= limit) {
        chunks.push(chunk.value);
      } else if (!drainRest) {
        await reader.cancel();
        return null;
      }
    }
  } catch {
    throw unreadable();
  }
  if (size > limit) return null;
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

/** A D1 bookmark as D1 issues them (four hyphenated hex groups); anything else is refused unsent. */
const BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/;
export const BOOKMARK_HEADER = "x-d1-bookmark";

/**
 * Opens the request's D1 session (D1 read replication; docs/edge.md "Reads and replicas"). API reads
 * may go to the nearest replica (`first-unconstrained`), or to one at least as fresh as the
 * bookmark the caller sends back from an earlier response; everything else (writes, and every
 * /oauth request, whose reads decide who gets a token) starts at the primary. Every response that
 * read or wrote returns the session's bookmark.
 */
export const attachDatabase = createMiddleware<AppEnv>(async (c, next) => {
  const bookmark = c.req.header(BOOKMARK_HEADER);
  if (bookmark !== undefined && !BOOKMARK.test(bookmark)) {
    throw new ApiError(
      400,
      "invalid_request",
      `Malformed ${BOOKMARK_HEADER} header: send back one this service returned`,
    );
  }
  const session = lazySession(() => c.env.DB.withSession(sessionStart(c.req.raw, bookmark)));
  c.set("bookmarked", bookmark !== undefined);
  const usage = c.get("timing")?.d1;
  let db: Database | undefined;
  c.set("db", () => (db ??= openDatabase(usage ? measuredD1(session, usage) : session)));
  await next();
  // A failure's bookmark would tell an unauthenticated caller how far the database has moved.
  const reached = session.getBookmark();
  if (reached && c.res.status < 400) c.res.headers.set(BOOKMARK_HEADER, reached);
});

/**
 * Where a request's D1 session starts: API reads at the nearest replica, or one at least as fresh
 * as the caller's bookmark; everything else at the primary, whatever bookmark it sends, since a
 * bookmark only promises "at least this fresh" and those reads decide security or precede writes.
 */
export function sessionStart(request: Request, bookmark: string | undefined): string {
  const { method } = request;
  if ((method !== "GET" && method !== "HEAD") || !pathnameOf(request.url).startsWith("/api/")) return "first-primary";
  return bookmark ?? "first-unconstrained";
}

/**
 * In development and staging, every response says where its time went (`Server-Timing`): D1 (queries,
 * time, rows read and written as D1 reports them), the client's Durable Object, and the whole request as the
 * Worker saw it. Production skips the measuring altogether.
 */
export const serverTiming = createMiddleware<AppEnv>(async (c, next) => {
  // Named, not "anything but production": a missing or misspelt setting measures nothing.
  if (c.env.ENVIRONMENT !== "development" && c.env.ENVIRONMENT !== "staging") return next();
  const timing: RequestTiming = {
    started: performance.now(),
    d1: newD1Usage(),
    durableObjectMs: 0,
    durableObjectCalls: 0,
  };
  c.set("timing", timing);
  await next();
  // The sign-in Worker's answer carries its own (middleware/sign-in-worker.ts).
  if (c.res.headers.has("Server-Timing")) return;
  const { d1 } = timing;
  const uncounted = d1.uncounted > 0 ? `, ${d1.uncounted} without a row count` : "";
  c.res.headers.set(
    "Server-Timing",
    [
      `d1;dur=${d1.milliseconds.toFixed(1)};desc="${d1.queries} queries, ${d1.rowsRead} rows read, ${d1.rowsWritten} written${uncounted}"`,
      `do;dur=${timing.durableObjectMs.toFixed(1)};desc="${timing.durableObjectCalls} call${timing.durableObjectCalls === 1 ? "" : "s"}"`,
      `total;dur=${(performance.now() - timing.started).toFixed(1)}`,
    ].join(", "),
  );
});

/**
 * Picks the response format from the path suffix; errors before this render as JSON. Browsers do
 * not run a script served with an error status, so JSONP is served as 200 and the real status
 * travels in the container's `code`. That happens here, outermost, so that everything inside
 * (method-not-allowed detection among them) sees the real status.
 */
export const selectFormat = createMiddleware<AppEnv>(async (c, next) => {
  c.set("format", formatOf(c.req.url));
  await next();
  if (c.get("format").kind === "jsonp" && c.res.status !== 200) {
    c.res = new Response(c.res.body, { status: 200, headers: c.res.headers });
  }
});
