/** The spec's User object, and the limited view of rule 2. */
import * as z from "zod/mini";
import { datetime, datetimeOrFalse, integerText, nullableText } from "./values";

export const GENDERS = ["undisclosed", "female", "male", "other", "withheld"] as const;

const contact = z.object({ value: z.string(), type: z.string(), primary: z.boolean(), verified: z.boolean() });

const address = z.object({
  type: z.string(),
  formatted: nullableText,
  streetAddress: nullableText,
  postalCode: nullableText,
  locality: nullableText,
  region: nullableText,
  country: nullableText,
});

export const userSchema = z.object({
  id: nullableText,
  userId: integerText,
  uuid: z.string(),
  name: z.object({ familyName: nullableText, givenName: nullableText, formatted: nullableText }),
  displayName: nullableText,
  published: datetimeOrFalse,
  updated: datetime,
  status: z.number(),
  email: nullableText,
  emailVerified: datetimeOrFalse,
  emails: z.array(contact),
  phoneNumber: nullableText,
  phoneNumberVerified: datetimeOrFalse,
  phoneNumbers: z.array(contact),
  verified: datetimeOrFalse,
  url: nullableText,
  photo: nullableText,
  preferredUsername: nullableText,
  gender: z.enum(GENDERS),
  birthday: z.string().check(z.regex(/^\d{4}-\d{2}-\d{2}$/)),
  locale: nullableText,
  utcOffset: nullableText,
  lastLoggedIn: datetimeOrFalse,
  lastAuthenticated: datetimeOrFalse,
  imported: datetimeOrFalse,
  migrated: datetimeOrFalse,
  /** Keyed by address type; an empty array when there are none (spec). */
  addresses: z.union([z.array(z.never()), z.record(z.string(), address)]),
  accounts: z.array(z.object({ domain: z.string(), userId: nullableText, username: nullableText })),
  merchants: z.array(z.number()),
  currentLocation: z.array(address),
  tracking: z.boolean(),
});

z.globalRegistry.add(userSchema, { id: "User" });

export type User = z.infer<typeof userSchema>;
export type UserField = keyof User;

/** Every field of the User object, in its order: what `fields` may select. */
export const USER_FIELDS = Object.keys(userSchema.shape) as UserField[];

/**
 * Spec "User", rule 2: what a client sees of a user who is not connected to it (but is to another
 * client of its merchant).
 */
export const limitedUserSchema = z.pick(userSchema, {
  id: true,
  userId: true,
  uuid: true,
  status: true,
  displayName: true,
  name: true,
  gender: true,
  preferredUsername: true,
  utcOffset: true,
  published: true,
  updated: true,
  lastLoggedIn: true,
  locale: true,
  tracking: true,
});

z.globalRegistry.add(limitedUserSchema, { id: "LimitedUser" });

export const LIMITED_USER_FIELDS = Object.keys(limitedUserSchema.shape) as (keyof z.infer<typeof limitedUserSchema>)[];
