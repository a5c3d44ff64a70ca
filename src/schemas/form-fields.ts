/**
 * Form fields of the API's writes (schemas/user-profile.ts, schemas/product-fields.ts), bounded as
 * the import bounds the same values (schemas/limits.ts). zod/mini, as everywhere in the Worker.
 */
import * as z from "zod/mini";
import { parseDatetime } from "../http/datetime";
import { RESERVED_PARAMETERS } from "../http/reserved-parameters";
import { LIMITS } from "./limits";
import { text } from "./text";

export { text };

/** A web address other clients may show as a link or an image: http or https only, never `javascript:`. */
export const webAddress = z.pipe(
  text(LIMITS.url),
  z.nullable(
    z.string().check(z.refine((value) => /^https?:\/\/\S+$/i.test(value) && URL.canParse(value), "an http(s) URL")),
  ),
);

/** A whole number from `min` to `max`, written in decimal. */
export const integer = (min: number, max: number) =>
  z.pipe(
    z.string().check(z.regex(/^-?\d{1,15}$/)),
    z.pipe(z.transform(Number), z.number().check(z.gte(min), z.lte(max))),
  );

/** A whole number from `min` to `max`; empty is null (the value cleared). */
export const clearableInteger = (min: number, max: number) =>
  z.union([
    z.pipe(
      z.literal(""),
      z.transform(() => null),
    ),
    integer(min, max),
  ]);

/** `1` or `0`. */
export const flag = z.pipe(
  z.enum(["0", "1"]),
  z.transform((value) => value === "1"),
);

/** Unix seconds or `YYYY-MM-DD HH:MM:SS`; empty is null (the time cleared). */
export const time = z.pipe(
  z.string().check(z.maxLength(32)),
  z.transform((value, ctx) => {
    if (value === "") return null;
    const seconds = /^\d{1,12}$/.test(value) ? Number(value) : parseDatetime(value);
    if (seconds === null) {
      ctx.issues.push({ code: "custom", message: "a time as Unix seconds or YYYY-MM-DD HH:MM:SS", input: value });
      return z.NEVER;
    }
    return seconds;
  }),
);

/**
 * The parameters of the call itself (the token in the body), taken and ignored: anything else an
 * endpoint does not name is refused, so that a field the API does not set is never silently dropped.
 */
export const reservedFields = Object.fromEntries(
  [...RESERVED_PARAMETERS].map((name) => [name, z.optional(z.string())]),
);

/** Of a validated form, the fields `schema` names (the call's own parameters left out). */
export function fieldsOf<Shape extends Record<string, unknown>, Form extends Record<string, unknown>>(
  shape: Shape,
  form: Form,
): Partial<Form> {
  return Object.fromEntries(
    Object.keys(shape).flatMap((key) => (form[key] === undefined ? [] : [[key, form[key]]])),
  ) as Partial<Form>;
}
