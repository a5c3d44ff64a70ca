/**
 * What the sign-up view asks for besides the address: the profile fields the client asks its users
 * for (its `fields` setting: `true` required, a text such as "optional" optional) that a form can
 * take at once. Addresses and a phone number are left to the profile's own changes, which verify
 * a number by text message (api/manage/user-phone.ts).
 */
import * as z from "zod/mini";
import { birthdayProblem } from "../http/datetime";
import { text } from "./text";
import { GENDERS } from "./responses/user";

/** Each client field the sign-up view takes, and the inputs it is made of. */
export const SIGN_UP_FIELDS = {
  names: ["givenName", "familyName"],
  displayName: ["displayName"],
  birthday: ["birthday"],
  gender: ["gender"],
} as const;

export type SignUpInput = (typeof SIGN_UP_FIELDS)[keyof typeof SIGN_UP_FIELDS][number];
export type SignUpField = { input: SignUpInput; required: boolean };

/** The genders a person chooses between on the form; the others are the API's to set. */
export const SIGN_UP_GENDERS = [
  "undisclosed",
  "female",
  "male",
  "other",
] as const satisfies readonly (typeof GENDERS)[number][];

export const signUpProfileSchema = z.object({
  givenName: z.optional(text()),
  familyName: z.optional(text()),
  displayName: z.optional(text()),
  birthday: z.optional(z.string().check(z.refine((value) => birthdayProblem(value) === null, "not a birthday"))),
  gender: z.optional(z.enum(SIGN_UP_GENDERS)),
});
export type SignUpProfile = z.infer<typeof signUpProfileSchema>;

/** The inputs the client's `fields` setting asks for, in the form's order. */
export function signUpFields(settings: Partial<Record<string, boolean | string>>): SignUpField[] {
  return Object.entries(SIGN_UP_FIELDS).flatMap(([field, inputs]) => {
    const setting = settings[field];
    const asked = setting === true || (typeof setting === "string" && setting !== "");
    return asked ? inputs.map((input) => ({ input, required: setting === true })) : [];
  });
}

/**
 * The profile the form sent for `fields`: what it filled in, checked; `missing` when a required
 * input is empty, `invalid` when one is not what it should be.
 */
export function readSignUpProfile(
  form: URLSearchParams,
  fields: SignUpField[],
): { profile: SignUpProfile } | { problem: "missing" | "invalid" } {
  const sent: Record<string, string> = {};
  for (const { input, required } of fields) {
    const value = form.get(input)?.trim() ?? "";
    if (value === "") {
      if (required) return { problem: "missing" };
      continue;
    }
    sent[input] = value;
  }
  const parsed = signUpProfileSchema.safeParse(sent);
  return parsed.success ? { profile: parsed.data } : { problem: "invalid" };
}
