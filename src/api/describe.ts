/**
 * GET /api/2/describe/{object}: what an object's enumerated values mean, localized, as SPiD
 * answers it (spid-tech-docs `cached-endpoints.edn`, `sample-responses/describe-object-get.json`):
 * `{"User.status": {"-3": "User deleted", ...}, "User.gender": {...}}`, one property with
 * `property`, in `locale` (en_US by default). Server token. The objects' JSON Schemas are in the
 * OpenAPI document (`components.schemas`).
 */
import { Hono } from "hono";
import * as z from "zod/mini";
import type { AppEnv } from "../env";
import { ApiError } from "../errors";
import { describeRoute, respond } from "../http/container";
import { singleQueryValue } from "../http/query-parameter";
import { requireToken } from "../middleware/auth";
import { type Locale, LOCALES } from "../pages/locale";
import { DESCRIBED_OBJECTS } from "../schemas/value-sets";

/** The objects by their lower-case names (SPiD's are capitalized; any case is taken). */
const OBJECTS = new Map([...DESCRIBED_OBJECTS].map(([name, properties]) => [name.toLowerCase(), { name, properties }]));

const descriptionSchema = z.record(z.string(), z.record(z.string(), z.string()));

const description = (route: { name: string; controller: string; description: string }) =>
  describeRoute({ ...route, success: { data: descriptionSchema } });

export const describeRoutes = new Hono<AppEnv>()
  .get(
    "/describe",
    description({
      name: "Describe an object (none named)",
      controller: "api/describe#missing",
      description: "SPiD's answer to a describe call without an object: 400 Missing required parameter object.",
    }),
    requireToken("describe", "server"),
    () => {
      throw new ApiError(400, "invalid_request", "Missing required parameter object");
    },
  )
  .get(
    "/describe/:object",
    describeRoute({
      name: "Describe properties",
      controller: "api/describe#show",
      description: `The meaning of each value of an object's enumerated properties, localized: ${[...DESCRIBED_OBJECTS]
        .map(([name, properties]) => `${name} (${[...properties.keys()].join(", ")})`)
        .join(
          "; ",
        )}. Keys are \`Object.property\`. An unknown object or property is 404. The objects' JSON Schemas are in /api/2/openapi.json under components.schemas.`,
      parameters: [
        { name: "property", in: "query", description: "Only this property", schema: { type: "string" } },
        { name: "locale", in: "query", schema: { type: "string", enum: [...LOCALES], default: "en_US" } },
      ],
      success: { data: descriptionSchema },
    }),
    requireToken("describe", "server"),
    (c) => {
      const object = OBJECTS.get((c.req.param("object") ?? "").toLowerCase());
      if (!object) throw new ApiError(404, "invalid_request", "No description found for this object");
      const locale = singleQueryValue(c, "locale") ?? "en_US";
      if (!(LOCALES as readonly string[]).includes(locale)) {
        throw new ApiError(400, "invalid_request", `Invalid parameter value: locale (accepted: ${LOCALES.join(", ")})`);
      }
      const property = singleQueryValue(c, "property");
      const properties = [...object.properties].filter(([name]) => property === undefined || name === property);
      if (properties.length === 0) throw new ApiError(404, "invalid_request", "No description found for this property");
      const data = Object.fromEntries(
        properties.map(([name, values]) => [
          `${object.name}.${name}`,
          Object.fromEntries([...values].map(([value, labels]) => [value, labels[locale as Locale]])),
        ]),
      );
      return respond(c, { object: "Utility", data, params: { options: {}, where: { object: object.name } } });
    },
  );
