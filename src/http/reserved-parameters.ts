/**
 * Parameters any call may carry that say how it travels or who makes it, never what it selects:
 * the access token, the JSONP callback, signing, and two that SPiD's own clients send (the PHP
 * SDK's `method` on every call, the data-sharing `contextClientId`; docs/spid-compatibility.md).
 * No endpoint refuses them as unknown, and none takes them as a search criterion.
 */
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../env";
import { ApiError } from "../errors";
import { singleQueryValue } from "./query-parameter";
import { SIGNED_PARAMETER } from "./signing";

export const METHOD_PARAMETER = "method";
export const CONTEXT_CLIENT_PARAMETER = "contextClientId";

export const RESERVED_PARAMETERS: ReadonlySet<string> = new Set([
  "oauth_token",
  "access_token",
  "callback",
  SIGNED_PARAMETER,
  METHOD_PARAMETER,
  CONTEXT_CLIENT_PARAMETER,
]);

/**
 * The PHP SDK's method override: `method=GET|POST|DELETE` in the query of every call, always the
 * request's own method. It is honoured only as that: any other value (a GET that says DELETE) is a
 * 400, so a query string can never turn one method into another. HEAD is GET without the body.
 */
export const methodParameter = createMiddleware<AppEnv>(async (c, next) => {
  // Most calls carry no query; those skip the parse.
  if (c.req.url.includes("?")) checkMethodParameter(c);
  await next();
});

function checkMethodParameter(c: Context<AppEnv>): void {
  const named = singleQueryValue(c, METHOD_PARAMETER);
  if (named === undefined) return;
  const own = c.req.method === "HEAD" ? "GET" : c.req.method;
  if (named.toUpperCase() !== own) {
    throw new ApiError(
      400,
      "invalid_request",
      `Parameter '${METHOD_PARAMETER}' must be the request's own method (${own}); it does not override it`,
    );
  }
}
