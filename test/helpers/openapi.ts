/**
 * Checks responses against the service's own OpenAPI document: `call()` runs every JSON response
 * of a documented operation through the response schema the document gives for its status (or
 * the `default` error schema), so every test of an endpoint also tests that the document tells
 * the truth about it.
 */
import { Validator } from "@cfworker/json-schema";
import { exports } from "cloudflare:workers";
import { BASE } from "./base";

type Operation = { responses: Record<string, { content?: Record<string, { schema: object }> }> };
type Document = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, object> } };

let document: Promise<Document> | undefined;
const validators = new Map<string, Validator>();

export function openApiDocument(): Promise<Document> {
  document ??= exports.default
    .fetch(new Request(`${BASE}/api/2/openapi.json`))
    .then((res: Response) => res.json() as Promise<Document>);
  return document;
}

function operationFor(doc: Document, method: string, path: string): Operation | undefined {
  for (const [template, operations] of Object.entries(doc.paths)) {
    const pattern = new RegExp(`^${template.replace(/\{\w+\}/g, "[^/]+")}(\\.json)?$`);
    if (pattern.test(path)) return operations[method.toLowerCase()];
  }
  return undefined;
}

/** Throws when a JSON response of a documented operation does not match the document. */
export async function checkAgainstDocument(request: Request, response: Response): Promise<void> {
  const url = new URL(request.url);
  // Trimmed objects (`fields`) and JSONP are documented in words, not by the schema.
  if (url.searchParams.has("fields") || !response.headers.get("Content-Type")?.startsWith("application/json")) return;
  const doc = await openApiDocument();
  const operation = operationFor(doc, request.method, url.pathname);
  if (!operation) return;
  const status = String(response.status);
  const described = operation.responses[status] ?? operation.responses.default;
  const schema = described?.content?.["application/json"]?.schema;
  if (!schema) throw new Error(`${request.method} ${url.pathname}: status ${status} is not in the OpenAPI document`);
  const key = `${request.method} ${url.pathname.replace(/\.json$/, "")} ${status in operation.responses ? status : "default"}`;
  let validator = validators.get(key);
  if (!validator) {
    const root = JSON.parse(
      JSON.stringify({ ...schema, $defs: doc.components.schemas }).replaceAll("#/components/schemas/", "#/$defs/"),
    );
    validator = new Validator(root, "2020-12");
    validators.set(key, validator);
  }
  const result = validator.validate(await response.clone().json());
  if (!result.valid) {
    const errors = result.errors.slice(0, 5).map((e) => `${e.instanceLocation}: ${e.error}`);
    throw new Error(
      `${request.method} ${url.pathname} ${status} does not match the OpenAPI document:\n${errors.join("\n")}`,
    );
  }
}
