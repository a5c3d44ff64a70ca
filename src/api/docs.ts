/**
 * The API's own description, generated from the app (http/openapi.ts), no token:
 * GET /api/2/openapi.json (OpenAPI 3.1, each object's JSON Schema under components.schemas) and
 * GET /api/2/reference (the same, readable, server-rendered with no script).
 */
import { Hono } from "hono";
import { html, raw } from "hono/html";
import * as z from "zod/mini";
import type { AppEnv } from "../env";
import { describeRoute } from "../http/container";
import { inlineSource } from "../http/content-security";
import { openApiDocument, type Route } from "../http/openapi";
import { WEB_VERSION } from "./version";

type OpenApiDocument = ReturnType<typeof openApiDocument>;

const STYLE =
  "body{font:16px/1.5 system-ui,sans-serif;max-width:60rem;margin:0 auto;padding:1rem}" +
  "code{background:#f3f3f3;padding:0 .2em}table{border-collapse:collapse;width:100%}" +
  "td,th{border:1px solid #ccc;padding:.2rem .4rem;text-align:left;vertical-align:top}" +
  "h2{margin-top:2rem;font-size:1.2rem}";
/**
 * The element's text must be STYLE exactly, as the CSP hash is of STYLE; inside the html``
 * template below, Prettier would wrap it in whitespace and browsers would refuse the sheet.
 */
const STYLE_ELEMENT = raw(`<style>${STYLE}</style>`);

type Operation = {
  summary?: string;
  description?: string;
  parameters: { name: string; in: string; description?: string; schema: { description?: string } }[];
  security?: Record<string, string[]>[];
  responses: Record<string, { description: string }>;
};

function referencePage(document: OpenApiDocument) {
  const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods as Record<string, Operation>).map(([method, operation]) => ({ path, method, operation })),
  );
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${document.info.title}: reference</title>
        ${STYLE_ELEMENT}
      </head>
      <body>
        <main>
          <h1>${document.info.title} ${document.info.version}</h1>
          <p>${document.info.description}</p>
          <p>Machine-readable: <a href="openapi.json">openapi.json</a> (OpenAPI 3.1).</p>
          ${operations.map(
            ({ path, method, operation }) =>
              html`<section>
                <h2><code>${method.toUpperCase()} ${path}</code>: ${operation.summary ?? ""}</h2>
                ${operation.description ? html`<p>${operation.description}</p>` : ""}
                <p>
                  Authentication:
                  ${(operation.security ?? []).map((s) => Object.keys(s)[0] ?? "none").join(" or ") || "none"}
                </p>
                ${
                  operation.parameters.length > 0
                    ? html`<table>
                        <thead>
                          <tr>
                            <th scope="col">Parameter</th>
                            <th scope="col">In</th>
                            <th scope="col">Meaning</th>
                          </tr>
                        </thead>
                        <tbody>
                          ${operation.parameters.map(
                            (p) =>
                              html`<tr>
                                <td><code>${p.name}</code></td>
                                <td>${p.in}</td>
                                <td>${p.description ?? p.schema.description ?? ""}</td>
                              </tr>`,
                          )}
                        </tbody>
                      </table>`
                    : ""
                }
                <ul>
                  ${Object.entries(operation.responses).map(([status, r]) => html`<li>${status}: ${r.description}</li>`)}
                </ul>
              </section>`,
          )}
        </main>
      </body>
    </html>`;
}

/** `routes` gives the whole app's routes, read when the document is first asked for. */
export function documentationRoutes(routes: () => readonly Route[]) {
  let document: OpenApiDocument | undefined;
  const documentFor = (serverUrl: string) =>
    (document ??= openApiDocument(routes(), { version: WEB_VERSION, serverUrl }));
  return new Hono<AppEnv>()
    .get(
      "/openapi",
      describeRoute({
        name: "Get the OpenAPI document",
        controller: "api/openapi#show",
        success: { data: z.record(z.string(), z.unknown()), bare: true },
      }),
      (c) => c.json(documentFor(c.env.BASE_URL), 200, { "Cache-Control": "public, max-age=300" }),
    )
    .get(
      "/reference",
      describeRoute({
        name: "Read the API reference",
        controller: "api/reference#show",
        success: { data: z.string(), bare: true, mediaType: "text/html" },
      }),
      async (c) =>
        c.html(referencePage(documentFor(c.env.BASE_URL)), 200, {
          "Content-Security-Policy": `default-src 'none'; style-src ${await inlineSource(STYLE)}; frame-ancestors 'none'; base-uri 'none'; form-action 'none'`,
          "Cache-Control": "public, max-age=300",
        }),
    );
}
