/** The response container every /api/2 answer travels in (spec "Response container"). */
import * as z from "zod/mini";
import type { $ZodType } from "zod/v4/core";
import { errorBodySchema } from "./oauth";

const base = {
  name: z.string(),
  version: z.string(),
  api: z.number(),
  object: z.string(),
  type: z.enum(["element", "collection"]),
  code: z.number(),
  request: z.object({ limit: z.number(), remaining: z.number(), reset: z.number() }),
  debug: z.object({
    route: z.object({ name: z.string(), url: z.string(), controller: z.string() }),
    params: z.object({ options: z.record(z.string(), z.unknown()), where: z.record(z.string(), z.unknown()) }),
  }),
};

/** `meta` of a collection: the page's size and offset, and what an endpoint adds (`scanned`). */
const collectionMeta = z.looseObject({ count: z.number(), offset: z.number() });

export function containerSchema(data: $ZodType, collection: boolean) {
  return z.object({
    ...base,
    meta: collection ? collectionMeta : z.null(),
    error: z.null(),
    data,
  });
}

export const errorContainerSchema = z.object({ ...base, meta: z.null(), error: errorBodySchema, data: z.null() });
