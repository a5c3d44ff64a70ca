/** The request pipeline every request passes first (order set in app.ts). */
import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import { openDatabase } from "../db/client";
import type { AppEnv } from "../env";
import { ApiError } from "../errors";
import { normalizeRequestEncoding } from "../http/encoding";
import { formatOf } from "../http/format";

/** Form posts here are a few hundred bytes; anything near this limit is not a real client. */
export const MAX_BODY_BYTES = 64 * 1024;

export const limitBody = bodyLimit({
  maxSize: MAX_BODY_BYTES,
  onError: () => {
    throw new ApiError(413, "invalid_request", `The request body is larger than ${MAX_BODY_BYTES} bytes`);
  },
});

export const normalizeEncoding = createMiddleware<AppEnv>(async (c, next) => {
  c.req.raw = await normalizeRequestEncoding(c.req.raw);
  await next();
});

export const attachDatabase = createMiddleware<AppEnv>(async (c, next) => {
  c.set("db", openDatabase(c.env.DB));
  await next();
});

/**
 * Picks the response format from the path suffix; errors before this render as JSON. Browsers do
 * not run a script served with an error status, so JSONP is served as 200 and the real status
 * travels in the container's `code`. That happens here, outermost, so that everything inside
 * (method-not-allowed detection among them) sees the real status.
 */
export const selectFormat = createMiddleware<AppEnv>(async (c, next) => {
  c.set("format", formatOf(new URL(c.req.url)));
  await next();
  if (c.get("format").kind === "jsonp" && c.res.status !== 200) {
    c.res = new Response(c.res.body, { status: 200, headers: c.res.headers });
  }
});
