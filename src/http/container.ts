/**
 * The response container every /api/2 response travels in (spec "Response container").
 * `respond` renders success, `respondError` failures; both honour the request's format.
 */
import type { Context } from "hono";
import { routePath } from "hono/route";
import type { $ZodType } from "zod/v4/core";
import type { RateLimitFigures } from "../durable-objects/rate-limiter-rpc";
import type { AppEnv } from "../env";
import type { ApiError, ContainerErrorBody } from "../errors";
import { containerSchema } from "../schemas/responses/container";
import { nowInSeconds } from "./datetime";
import { documented, type Parameter } from "./openapi";
import { signData } from "./signing";

/** SPiD's (spid-tech-docs `types/response-container.edn`): the PHP SDK unwraps only a container so named. */
export const CONTAINER_NAME = "SPP Container";
export const CONTAINER_VERSION = "0.2";
export const API_VERSION = 2;

export type QueryParams = { options: Record<string, unknown>; where: Record<string, unknown> };
export type CollectionMeta = { count: number; offset: number };

type Payload = {
  object: string;
  data: unknown;
  type?: "element" | "collection";
  meta?: CollectionMeta | null;
  params?: QueryParams;
};

/**
 * `data` already serialized, for views whose JSON is kept between requests: the container's
 * serialization copies the text in instead of serializing the objects again.
 */
export class JsonText {
  constructor(readonly text: string) {}
}

/** How the container's text ends when `data` (its last member) is null. */
const NULL_DATA_END = '"data":null}';

/** `data` as JSON text. */
function dataJson(data: unknown): string {
  return data instanceof JsonText ? data.text : JSON.stringify(data);
}

/** `debug.route.url` shows the request's own path only where no route matched; this much of it. */
const MAX_SHOWN_PATH = 256;

/** Figures for requests that are not counted (no token, or rejected before counting). */
const UNCOUNTED: RateLimitFigures = { limit: 0, remaining: 0, reset: 0 };

export type RouteDescription = {
  name: string;
  controller: string;
  description?: string;
  parameters?: Parameter[];
  /**
   * The success: its status, the `data` it carries in the container (a `collection` has `meta`),
   * or, `bare`, the whole body (the OAuth endpoints).
   */
  success: {
    status?: 200 | 201 | 204 | 303;
    data: $ZodType;
    collection?: boolean;
    bare?: boolean;
    mediaType?: string;
    /** A redirect: no body. */
    redirect?: boolean;
  };
};

/**
 * Route middleware: names the endpoint for the container's `debug.route`, and describes its
 * operation for the OpenAPI document (http/openapi.ts).
 */
export function describeRoute(route: RouteDescription) {
  const { name, controller, success } = route;
  const middleware = async (c: Context<AppEnv>, next: () => Promise<void>) => {
    c.set("route", { name, controller });
    await next();
  };
  return documented(middleware, {
    summary: name,
    operationId: controller,
    ...(route.description && { description: route.description }),
    parameters: route.parameters ?? [],
    responses: {
      [success.status ?? 200]: success.redirect
        ? { description: "Redirect" }
        : {
            description: "Success",
            schema: success.bare ? success.data : containerSchema(success.data, success.collection ?? false),
            ...(success.mediaType && { mediaType: success.mediaType }),
          },
    },
  });
}

/** The container with `payload`; signed (asynchronously) when the request asked for it (http/signing.ts). */
export function respond(c: Context<AppEnv>, payload: Payload, status = 200): Response | Promise<Response> {
  const container = build(c, status, rendered(payload));
  const key = c.get("signing")?.key;
  if (key) {
    return signData(key, dataJson(payload.data)).then((signed) => serialize(c, status, { ...container, ...signed }));
  }
  return serialize(c, status, container);
}

/** A container's text for one second: see `respondSameForSecond`. */
export type HeldForSecond = { second: number; text: string };

/**
 * For a route whose answer is the same for every caller within a second (status and version: the
 * current time is all that changes), the container's JSON text is made once a second per isolate
 * and kept in the route's `held`. Only plain JSON without a token is kept: JSONP carries the
 * caller's callback, and a signed answer is the caller's own; those are rendered by `respond`.
 */
export function respondSameForSecond(
  c: Context<AppEnv>,
  held: HeldForSecond,
  payload: (now: number) => Payload,
): Response | Promise<Response> {
  const now = nowInSeconds();
  if (c.get("format")?.kind !== "json" || c.get("signing") || c.get("rateLimit")) return respond(c, payload(now));
  if (held.second !== now) {
    held.text = containerJson(build(c, 200, rendered(payload(now))));
    held.second = now;
  }
  return new Response(held.text, { status: 200, headers: containerHeaders(c, JSON_CONTENT_TYPE) });
}

export function respondError(c: Context<AppEnv>, err: ApiError): Response {
  const response = serialize(
    c,
    err.status,
    build(c, err.status, {
      object: "Error",
      type: "element",
      meta: null,
      params: { options: {}, where: {} },
      error: err.containerBody,
      data: null,
    }),
  );
  for (const [name, value] of Object.entries(err.headers)) response.headers.set(name, value);
  return response;
}

type Rendered = {
  object: string;
  type: "element" | "collection";
  meta: CollectionMeta | null;
  params: QueryParams;
  error: ContainerErrorBody | null;
  data: unknown;
};

function rendered(payload: Payload): Rendered {
  return {
    object: payload.object,
    type: payload.type ?? "element",
    meta: payload.meta ?? null,
    params: payload.params ?? { options: {}, where: {} },
    error: null,
    data: payload.data,
  };
}

function build(c: Context<AppEnv>, status: number, body: Rendered): Record<string, unknown> {
  const route = c.get("route");
  const figures = c.get("rateLimit");
  return {
    name: CONTAINER_NAME,
    version: CONTAINER_VERSION,
    api: API_VERSION,
    object: body.object,
    type: body.type,
    code: status,
    request: figures ?? UNCOUNTED,
    debug: {
      route: {
        name: route?.name ?? "",
        url: route ? routePath(c) : new URL(c.req.url).pathname.slice(0, MAX_SHOWN_PATH),
        controller: route?.controller ?? "",
      },
      params: body.params,
    },
    meta: body.meta,
    error: body.error,
    data: body.data,
  };
}

const JSON_CONTENT_TYPE = "application/json; charset=utf-8";

function serialize(c: Context<AppEnv>, status: number, container: Record<string, unknown>): Response {
  const format = c.get("format");
  if (format?.kind === "jsonp") {
    // The comment prefix defeats content-sniffing attacks that abuse a reflected callback name;
    // U+2028 and U+2029 are line terminators in scripts before ES2019, so they travel escaped.
    // The status is the real one here; selectFormat serves JSONP as 200 on the way out.
    const json = containerJson(container)
      .replace(/\u2028/g, "\\u2028")
      .replace(/\u2029/g, "\\u2029");
    return new Response(`/**/${format.callback}(${json});`, {
      status,
      headers: containerHeaders(c, "application/javascript; charset=utf-8"),
    });
  }
  return new Response(containerJson(container), { status, headers: containerHeaders(c, JSON_CONTENT_TYPE) });
}

function containerHeaders(c: Context<AppEnv>, contentType: string): Headers {
  const headers = new Headers({ "Cache-Control": "no-store", "Content-Type": contentType });
  const figures = c.get("rateLimit");
  if (figures) {
    headers.set("X-RateLimit-Limit", String(figures.limit));
    headers.set("X-RateLimit-Remaining", String(figures.remaining));
    headers.set("X-RateLimit-Reset", String(figures.reset));
  }
  return headers;
}

function containerJson(container: Record<string, unknown>): string {
  const { data } = container;
  if (!(data instanceof JsonText)) return JSON.stringify(container);
  const head = JSON.stringify({ ...container, data: null });
  if (!head.endsWith(NULL_DATA_END)) throw new Error("the container's data is not its last member");
  return `${head.slice(0, -NULL_DATA_END.length)}"data":${data.text}}`;
}
