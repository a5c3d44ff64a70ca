/**
 * Response formats chosen by URL suffix: none or `.json` is JSON, `.jsonp` wraps the container in a
 * call to the function named by the `callback` query parameter. The suffix is stripped before
 * routing (see app.ts getPath), so one route serves every format.
 */
import { ApiError } from "../errors";

export type ResponseFormat = { kind: "json" } | { kind: "jsonp"; callback: string };

const SUFFIX = /\.([A-Za-z0-9]+)$/;
/** A plain identifier or a dotted path of them; nothing else is ever written into a script. */
const CALLBACK = /^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*$/;
const MAX_CALLBACK_LENGTH = 128;
const DEFAULT_CALLBACK = "callback";
/**
 * ECMAScript reserved words (strict mode's included) and literals: `import(...)`, `new(...)` or
 * `this(...)` would be another expression than a function call.
 */
const RESERVED_WORDS = new Set(
  (
    "await break case catch class const continue debugger default delete do else enum export extends " +
    "false finally for function if implements import in instanceof interface let new null package " +
    "private protected public return static super switch this throw true try typeof var void while with yield"
  ).split(" "),
);

/** The path the router sees: API paths lose their format suffix. */
export function routingPath(pathname: string): string {
  return pathname.startsWith("/api/") ? pathname.replace(SUFFIX, "") : pathname;
}

const JSON_FORMAT: ResponseFormat = { kind: "json" };

/** The format `requestUrl` asks for; only a JSONP request has its query parsed (for the callback). */
export function formatOf(requestUrl: string): ResponseFormat {
  const suffix = SUFFIX.exec(pathnameOf(requestUrl))?.[1];
  if (suffix === undefined || suffix === "json") return JSON_FORMAT;
  if (suffix !== "jsonp") {
    throw new ApiError(406, "invalid_request", "Unsupported format: this endpoint serves json and jsonp");
  }
  const callback = new URL(requestUrl).searchParams.get("callback") ?? DEFAULT_CALLBACK;
  if (
    callback.length > MAX_CALLBACK_LENGTH ||
    !CALLBACK.test(callback) ||
    callback.split(".").some((name) => RESERVED_WORDS.has(name))
  ) {
    throw new ApiError(
      400,
      "invalid_request",
      "Invalid callback: use a JavaScript identifier or a dotted path of identifiers, none a reserved word",
    );
  }
  return { kind: "jsonp", callback };
}

/**
 * A request's URL is the runtime's serialization of a parsed URL, so its path is exactly the text
 * between the authority and the query: the same as `new URL(url).pathname`, without building one.
 */
export function pathnameOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("://") + 3);
  if (start < 0) return "/";
  let end = url.indexOf("?", start);
  const fragment = url.indexOf("#", start);
  if (fragment >= 0 && (end < 0 || fragment < end)) end = fragment;
  return url.slice(start, end < 0 ? undefined : end);
}
