/** The response container every /api/2 answer travels in (spec "Response container"). */
import * as z from "zod/mini";
import type { $ZodType } from "zod/v4/core";
import { containerErrorBodySchema } from "./oauth";

const base = {
  name: z.literal("SPP Container"),
  version: z.literal("0.2"),
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

/**
 * A signed response (`signed=1`, spec "Response signing"): `data` is the payload's JSON, Base64 URL
 * encoded, and `sig` its HMAC-SHA256 under the client's signing secret, Base64 URL encoded.
 */
export const signedContainerSchema = z.object({
  ...base,
  meta: z.nullable(collectionMeta),
  error: z.null(),
  data: z.string(),
  algorithm: z.literal("HMAC-SHA256"),
  sig: z.string(),
});

z.globalRegistry.add(signedContainerSchema, { id: "SignedContainer" });

/** A success: `data` in the container, or, when the request asked for it, signed. */
export function containerSchema(data: $ZodType, collection: boolean) {
  const plain = z.object({
    ...base,
    meta: collection ? collectionMeta : z.null(),
    error: z.null(),
    data,
  });
  return z.union([plain, signedContainerSchema]);
}

export const errorContainerSchema = z.object({
  ...base,
  meta: z.null(),
  error: containerErrorBodySchema,
  data: z.null(),
});
