/**
 * The User fields a client sets through the API (POST /api/2/user, POST /api/2/user/{userId}), as
 * SPiD takes them: form fields, `name` and `addresses` as JSON text. Bounded as the import bounds
 * them (schemas/limits.ts); an empty value clears a text field. zod/mini, as everywhere in the Worker.
 */
import * as z from "zod/mini";
import { birthdayProblem } from "../http/datetime";
import { fieldsOf, reservedFields, text, webAddress } from "./form-fields";
import { LIMITS } from "./limits";
import { GENDERS } from "./responses/user";

/** A JSON text whose value `schema` takes. */
const json = <T extends z.ZodMiniType>(schema: T) =>
  z.pipe(
    z.pipe(
      z.string().check(z.maxLength(16_384)),
      z.transform((value, ctx) => {
        try {
          return JSON.parse(value) as unknown;
        } catch {
          ctx.issues.push({ code: "custom", message: "not JSON", input: value });
          return z.NEVER;
        }
      }),
    ),
    schema,
  );

const nullableText = (max?: number) => z.optional(z.nullable(text(max)));

const address = z.strictObject({
  formatted: nullableText(LIMITS.formattedAddress),
  streetAddress: nullableText(),
  postalCode: nullableText(LIMITS.code),
  locality: nullableText(),
  region: nullableText(),
  country: nullableText(LIMITS.shortText),
});

export type AddressFields = z.infer<typeof address>;

/** Address types are words (home, delivery, invoice); `current` is the current location, not set here. */
const ADDRESS_TYPE = /^(?!current$)[A-Za-z]{1,32}$/;

export const userProfileFields = {
  displayName: z.optional(text()),
  preferredUsername: z.optional(text()),
  url: z.optional(webAddress),
  photo: z.optional(webAddress),
  gender: z.optional(z.enum(GENDERS)),
  birthday: z.optional(z.string().check(z.refine((value) => birthdayProblem(value) === null, "not a birthday"))),
  locale: z.optional(z.string().check(z.regex(/^[a-z]{2,3}_[A-Z]{2}$/))),
  utcOffset: z.optional(z.string().check(z.regex(/^[+-]\d{2}:\d{2}$/))),
  /** Only the parts sent change; null clears one. */
  name: z.optional(
    json(z.strictObject({ givenName: nullableText(), familyName: nullableText(), formatted: nullableText() })),
  ),
  /** Only the types sent change: an address replaces that type's, null removes it. */
  addresses: z.optional(
    json(
      z
        .record(z.string().check(z.regex(ADDRESS_TYPE)), z.nullable(address))
        .check(z.refine((map) => Object.keys(map).length <= LIMITS.addressTypes, "too many address types")),
    ),
  ),
};

export type ProfileFields = z.infer<z.ZodMiniObject<typeof userProfileFields>>;

/** The profile fields of a validated form, without the call's own parameters. */
export function profileFieldsOf(form: ProfileFields): ProfileFields {
  return fieldsOf(userProfileFields, form);
}

/**
 * POST /api/2/user/{userId}: the fields sent, a new sign-in address with where its confirmation
 * link leads, and a new phone number (texted a code).
 */
export const userUpdateSchema = z.strictObject({
  ...userProfileFields,
  email: z.optional(z.string().check(z.maxLength(LIMITS.email))),
  redirectUri: z.optional(z.string().check(z.maxLength(LIMITS.redirectUri))),
  phoneNumber: z.optional(z.string().check(z.maxLength(LIMITS.code))),
  ...reservedFields,
});

/** POST /api/2/user/{userId}/phone/verify: the number and the code texted to it. */
export const phoneVerifySchema = z.strictObject({
  phoneNumber: z.string().check(z.maxLength(LIMITS.code)),
  code: z.string().check(z.maxLength(LIMITS.code)),
  ...reservedFields,
});

/** A phone number in E.164 (`+` and 8 to 15 digits), spaces, dots, dashes and brackets dropped; null when it is none. */
export function canonicalPhoneNumber(value: string): string | null {
  // "+44 (0)20 …": the bracketed trunk zero is dialled at home only.
  const number = value.replace(/\(0\)/g, "").replace(/[\s().-]/g, "");
  return /^\+[1-9]\d{7,14}$/.test(number) ? number : null;
}

/** POST /api/2/user: the e-mail address, the profile, and where the confirmation link leads. */
export const userCreateSchema = z.strictObject({
  email: z.string().check(z.maxLength(LIMITS.email)),
  redirectUri: z.optional(z.string().check(z.maxLength(LIMITS.redirectUri))),
  ...userProfileFields,
  ...reservedFields,
});
export type UserCreate = z.infer<typeof userCreateSchema>;
