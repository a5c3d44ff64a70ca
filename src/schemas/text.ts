/**
 * Text fields as every form takes them (schemas/form-fields.ts, schemas/sign-up.ts): a leaf of its
 * own, so that what the queue's messages hold (schemas/link-request.ts) imports nothing of HTTP.
 */
import * as z from "zod/mini";
import { LIMITS } from "./limits";

const utf8 = new TextEncoder();

/** Text of at most `max` bytes of UTF-8, well-formed; empty is null (the field cleared). */
export const text = (max: number = LIMITS.text) =>
  z.pipe(
    z.string().check(
      z.refine((value) => value.isWellFormed(), "not well-formed Unicode"),
      z.refine((value) => utf8.encode(value).length <= max, `at most ${max} bytes of UTF-8`),
    ),
    z.transform((value) => (value === "" ? null : value)),
  );
