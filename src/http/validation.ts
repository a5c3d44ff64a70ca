/**
 * zod validation that fails in the documented error format: a thin wrapper around zValidator
 * whose hook throws, so no handler ever sees (or returns) raw zod output. Messages name the
 * offending parameter but never echo its value.
 */
import { zValidator } from "@hono/zod-validator";
import type { ValidationTargets } from "hono";
import * as z from "zod/mini";
import type { $ZodType } from "zod/v4/core";
import { ApiError, OAuthError } from "../errors";
import { FORM_MEDIA_TYPE, isForm, isJson } from "./media-type";
import { documented } from "./openapi";

type ErrorKind = "api" | "oauth";

/**
 * `failure` is an endpoint's own text for bad input (the spec's "Invalid payload data"); the
 * parameter at fault follows it.
 */
export function validate<Target extends keyof ValidationTargets, Schema extends $ZodType>(
  target: Target,
  schema: Schema,
  kind: ErrorKind = "api",
  failure?: string,
) {
  const described = (text: string) => (failure === undefined ? text : `${failure}: ${text}`);
  // zod/mini schemas have no methods, so parsing goes through the function; its result type
  // differs from classic zod's only in name.
  const validationFunction = (s: Schema, value: unknown) => z.safeParseAsync(s, value) as never;
  const validator = zValidator(
    target,
    schema,
    (result, c) => {
      if (target === "form" && !isForm(c.req.header("Content-Type"))) {
        throw invalidRequest(kind, described(`The request body must be ${FORM_MEDIA_TYPE}`));
      }
      if (target === "json" && !isJson(c.req.header("Content-Type"))) {
        throw invalidRequest(kind, described("The request body must be application/json"));
      }
      if (!result.success) {
        const issue = result.error.issues[0];
        if (issue?.code === "unrecognized_keys") {
          const within = issue.path.join(".");
          throw invalidRequest(
            kind,
            described(
              within === ""
                ? `Unknown parameter '${issue.keys[0]}'`
                : `Parameter '${within}' is invalid: unknown member '${issue.keys[0]}'`,
            ),
          );
        }
        const name = issue?.path.join(".") || "request";
        const input = result.data as Record<string, unknown> | undefined;
        const missing = issue?.path.length === 1 && input?.[String(issue.path[0])] === undefined;
        throw invalidRequest(
          kind,
          described(`Parameter '${name}' ${missing ? "is missing" : "is invalid or repeated"}`),
        );
      }
    },
    { validationFunction },
  );
  if (target === "form") return documented(validator, { requestBody: { schema, mediaType: FORM_MEDIA_TYPE } });
  if (target === "json") return documented(validator, { requestBody: { schema, mediaType: "application/json" } });
  return validator;
}

function invalidRequest(kind: ErrorKind, description: string): ApiError {
  return kind === "oauth"
    ? new OAuthError(400, "invalid_request", description)
    : new ApiError(400, "invalid_request", description);
}
