/**
 * Value shapes the response schemas share. The response schemas (this folder) are the one
 * description of what the API answers: the views are typed by them, the OpenAPI document and
 * the JSON Schemas under its `components.schemas` are generated from them. zod/mini, as everywhere in the Worker.
 */
import * as z from "zod/mini";

/** `YYYY-MM-DD HH:MM:SS`, UTC. */
export const datetime = z.string().check(z.regex(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/));
/** A datetime, or false for one that never happened. */
export const datetimeOrFalse = z.union([datetime, z.literal(false)]);
/** The spec's "integer (as string)". */
export const integerText = z.string().check(z.regex(/^-?\d+$/));
export const nullableText = z.nullable(z.string());
export const nullableIntegerText = z.nullable(integerText);
