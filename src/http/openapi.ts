/**
 * The OpenAPI 3.1 document of the service, generated from the app itself: each route's
 * middleware carries a fragment of its operation (describeRoute: summary, parameters, response;
 * requireToken: security and the failures it adds; validate: the request body), and the document
 * is assembled by walking the app's routes. Schemas come from the zod schemas that validate
 * requests and type the views (schemas/responses), through zod's own JSON Schema conversion. A
 * route without a fragment is missing from the document, which test/openapi.test.ts catches.
 */
import * as z from "zod/mini";
import type { $ZodType } from "zod/v4/core";
import { errorContainerSchema } from "../schemas/responses/container";
import { errorBodySchema } from "../schemas/responses/oauth";

const OPERATION = Symbol("openapi operation");

export type Parameter = {
  name: string;
  in: "query" | "path" | "header";
  description?: string;
  required?: boolean;
  schema: Record<string, unknown>;
};

export type ResponseFragment = { description: string; schema?: $ZodType; mediaType?: string };

/** What one middleware knows of its operation; fragments of one route are merged in order. */
export type OperationFragment = {
  summary?: string;
  operationId?: string;
  tags?: string[];
  description?: string;
  parameters?: Parameter[];
  requestBody?: { schema: $ZodType; mediaType: string };
  security?: Record<string, string[]>[];
  responses?: Record<string, ResponseFragment>;
};

/** The middleware, carrying its part of the operation's description. */
export function documented<T extends object>(middleware: T, fragment: OperationFragment): T {
  const value = { ...fragmentOf(middleware), ...fragment };
  Object.defineProperty(middleware, OPERATION, { value, configurable: true });
  return middleware;
}

function fragmentOf(handler: unknown): OperationFragment | undefined {
  return (handler as { [OPERATION]?: OperationFragment })[OPERATION];
}

export type Route = { method: string; path: string; handler: unknown };

/** The routes of /api/2 and /oauth (and the well-known key set) that answer a method. */
export function documentedRoutes(routes: readonly Route[]): { method: string; path: string; documented: boolean }[] {
  const operations = new Map<string, { method: string; path: string; documented: boolean }>();
  for (const route of routes) {
    if (route.method === "ALL" || !/^\/(api\/2|oauth|\.well-known|flow)\/|^\/logout$/.test(route.path)) continue;
    const key = `${route.method} ${route.path}`;
    const known = operations.get(key) ?? { method: route.method, path: route.path, documented: false };
    // Described means by describeRoute (a summary and a success): a token check alone is not.
    known.documented ||= fragmentOf(route.handler)?.summary !== undefined;
    operations.set(key, known);
  }
  return [...operations.values()];
}

/** JSON Schema (2020-12) of a zod schema, its named parts hoisted to `components`. */
function jsonSchema(schema: $ZodType, components: Record<string, unknown>, io: "input" | "output") {
  const converted = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as Record<string, unknown>;
  const { $schema: _, $defs, ...rest } = converted;
  for (const [name, definition] of Object.entries(($defs as Record<string, unknown>) ?? {}))
    components[name] = definition;
  return JSON.parse(JSON.stringify(rest).replaceAll('"#/$defs/', '"#/components/schemas/')) as Record<string, unknown>;
}

/** `/api/2/user/:userId` as OpenAPI writes it. */
const openApiPath = (path: string) => path.replace(/:(\w+)/g, "{$1}");

export function openApiDocument(routes: readonly Route[], info: { version: string; serverUrl: string }) {
  const components: Record<string, unknown> = {};
  const paths: Record<string, Record<string, unknown>> = {};
  const byOperation = new Map<string, OperationFragment[]>();
  for (const route of routes) {
    const fragment = fragmentOf(route.handler);
    if (!fragment || route.method === "ALL") continue;
    const key = `${route.method} ${route.path}`;
    byOperation.set(key, [...(byOperation.get(key) ?? []), fragment]);
  }
  for (const [key, fragments] of byOperation) {
    const [method, path] = key.split(" ") as [string, string];
    const merged = fragments.reduce<OperationFragment>(
      (all, part) => ({
        ...all,
        ...part,
        parameters: [...(all.parameters ?? []), ...(part.parameters ?? [])],
        responses: { ...all.responses, ...part.responses },
      }),
      {},
    );
    const pathParameters = [...path.matchAll(/:(\w+)/g)].map(([, name]): Parameter => ({
      name: name!,
      in: "path",
      required: true,
      schema: { type: "string" },
    }));
    // Failures have the spec's error body, in the container under /api/2.
    const api = path.startsWith("/api/");
    const failure = api ? errorContainerSchema : errorBodySchema;
    const described = { ...merged.responses, default: { description: "Any other failure" } };
    const responses = Object.fromEntries(
      Object.entries(described).map(([status, response]: [string, ResponseFragment]) => {
        const schema = response.schema ?? (status === "default" || Number(status) >= 400 ? failure : undefined);
        const mediaType = response.mediaType ?? "application/json";
        return [
          status,
          {
            description: response.description,
            ...(schema && { content: { [mediaType]: { schema: jsonSchema(schema, components, "output") } } }),
          },
        ];
      }),
    );
    paths[openApiPath(path)] = {
      ...paths[openApiPath(path)],
      [method.toLowerCase()]: {
        ...(merged.summary && { summary: merged.summary }),
        ...(merged.operationId && { operationId: merged.operationId }),
        ...(merged.description && { description: merged.description }),
        tags: merged.tags ?? [api ? "API" : "OAuth"],
        parameters: [...pathParameters, ...(merged.parameters ?? [])],
        ...(merged.requestBody && {
          requestBody: {
            required: true,
            content: {
              [merged.requestBody.mediaType]: { schema: jsonSchema(merged.requestBody.schema, components, "input") },
            },
          },
        }),
        ...(merged.security && { security: merged.security }),
        responses,
      },
    };
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Account and Commerce API",
      version: info.version,
      description:
        "OAuth 2.0 authorization server and account/commerce API, version 2. Every /api/2 path also " +
        "takes a format suffix: `.json` (the default) or `.jsonp` with a `callback` parameter.",
    },
    servers: [{ url: info.serverUrl }],
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        serverToken: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "JWT",
          description: "A server access token (client_credentials)",
        },
        userToken: { type: "http", scheme: "bearer", bearerFormat: "JWT", description: "A user access token" },
        clientCredentials: { type: "http", scheme: "basic", description: "The client's id and secret" },
      },
    },
  };
}
