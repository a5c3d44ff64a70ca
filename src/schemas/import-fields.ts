/**
 * Field schemas of the import file (schemas/import.ts): real dates only, every text and JSON
 * value bounded in UTF-8 bytes, and no key that JavaScript objects cannot hold. The limits are
 * chosen so that the largest possible row still fits one D1 statement (100,000 bytes, with text
 * written as hex by db/sql-script.ts); test/import-limits.test.ts imports such rows to prove it.
 */
import * as z from "zod";
import { birthdayProblem, LAST_SECOND, parseDatetime } from "../http/datetime";
import { canonicalEmailAddress } from "./email-address";
import { LIMITS } from "./limits";

const utf8 = new TextEncoder();
const byteLength = (text: string) => utf8.encode(text).length;

/**
 * A string of at most `max` bytes of UTF-8. Lone surrogates are refused: they have no UTF-8 form
 * (they would be stored as U+FFFD) and JSON writes each as six bytes, past any byte count.
 */
export const text = (max: number = LIMITS.text) =>
  z
    .string()
    .refine((value) => value.isWellFormed(), "not well-formed Unicode (a lone surrogate)")
    .refine((value) => byteLength(value) <= max, `at most ${max} bytes of UTF-8`);

/**
 * z.record, except that a `__proto__` key, at any depth of its value, is refused with its path:
 * zod skips such keys in records without a word (assigning one would replace the result's
 * prototype), so they would vanish on import. Objects need no such care: z.strictObject reports
 * `__proto__` as an unrecognized key.
 */
export function record<Key extends z.core.$ZodRecordKey, Value extends z.core.SomeType>(key: Key, value: Value) {
  return z
    .unknown()
    .superRefine((input, ctx) => {
      for (const path of protoKeyPaths(input)) {
        ctx.addIssue({ code: "custom", message: "__proto__ is not allowed as a key", path });
      }
    })
    .pipe(z.record(key, value));
}

function protoKeyPaths(value: unknown, path: PropertyKey[] = []): PropertyKey[][] {
  if (typeof value !== "object" || value === null) return [];
  return Object.entries(value).flatMap(([key, child]) =>
    key === "__proto__" ? [[...path, key]] : protoKeyPaths(child, [...path, key]),
  );
}

/** `YYYY-MM-DD HH:MM:SS` (UTC) or Unix seconds, 1970 to 9999, to Unix seconds. */
export const datetime = z.union([z.number(), z.string()]).transform((value, ctx) => {
  const seconds = typeof value === "number" ? value : parseDatetime(value);
  const problem =
    seconds === null
      ? "expected a real date and time as YYYY-MM-DD HH:MM:SS (UTC)"
      : !Number.isInteger(seconds) || seconds < 0 || seconds > LAST_SECOND
        ? "expected whole Unix seconds from 1970-01-01 00:00:00 to 9999-12-31 23:59:59"
        : null;
  if (problem !== null) {
    ctx.addIssue({ code: "custom", message: problem });
    return z.NEVER;
  }
  return seconds!;
});

/** The spec's birthday (http/datetime.ts birthdayProblem says what it is). */
export const birthday = z.string().superRefine((value, ctx) => {
  const problem = birthdayProblem(value);
  if (problem !== null) ctx.addIssue({ code: "custom", message: problem });
});

/** Integers that the API serializes as strings may be given either way. */
export const integerId = z.union([
  z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  z
    .string()
    .regex(/^\d{1,15}$/)
    .transform(Number),
]);

export const flag = z.union([
  z.boolean(),
  z.enum(["0", "1"]).transform((v) => v === "1"),
  z.literal(0).transform(() => false),
  z.literal(1).transform(() => true),
]);

/** Stored in its canonical form (schemas/email-address.ts), internationalized addresses included. */
export const email = z.string().transform((value, ctx) => {
  const canonical = canonicalEmailAddress(value);
  if (canonical === null) {
    ctx.addIssue({ code: "custom", message: "Invalid email address" });
    return z.NEVER;
  }
  return canonical;
});

/** UUIDs compare without regard to case (RFC 9562 §4), so they are stored in lower case. */
export const uuid = z.uuid().transform((v) => v.toLowerCase());

export const oneOf = <T extends number>(values: readonly T[], what: string) =>
  z
    .number()
    .int()
    .refine((v): v is T => (values as readonly number[]).includes(v), `${what} must be one of ${values.join(", ")}`);

const cssValue = z.union([text(LIMITS.cssValue), z.number(), z.boolean()]);

/**
 * `css` and `termsCss` (contents not shown in the spec): style settings by name, each a value or
 * one level of named values (`{"button": {"color": "#fff"}}`), at most LIMITS.css bytes as JSON.
 */
export const css = record(text(LIMITS.cssKey), z.union([cssValue, record(text(LIMITS.cssKey), cssValue)])).refine(
  (value) => byteLength(JSON.stringify(value)) <= LIMITS.css,
  `at most ${LIMITS.css} bytes as JSON`,
);
