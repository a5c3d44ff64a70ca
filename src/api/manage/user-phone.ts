/**
 * A user's phone number change (docs/management.md "Changing a phone number"): `phoneNumber` on
 * `POST /api/2/user/{userId}` adds the number unverified and texts it a 6-digit code;
 * `POST /api/2/user/{userId}/phone/verify` with that code makes it the user's verified primary
 * number. The code lives 10 minutes and takes 5 tries; only the newest change's code counts; a
 * user is texted at most once a minute, and a number for at most 3 of a merchant's users an hour.
 * The same callers as an address change: the operator's client, or an admin client of the user's
 * one merchant.
 */
import { type Context, Hono } from "hono";
import { readUserProfile } from "../../db/cached-reads";
import { findClient } from "../../db/queries/clients";
import {
  addUnverifiedPhone,
  codesTextedTo,
  dropUnconfirmedPhone,
  endPhoneVerification,
  findPhoneVerification,
  makePrimaryPhone,
  startPhoneVerification,
  takePhoneAttempt,
} from "../../db/queries/phone-verifications";
import type { UserProfile } from "../../db/queries/users";
import { REFUSED_USER_STATUSES } from "../../db/schema";
import type { AppEnv } from "../../env";
import { ApiError, TryAgainLater } from "../../errors";
import { type Actor, auditEntry } from "../../events/audit";
import { callbackRows, wakeSchedules } from "../../events/callbacks";
import { describeRoute, respond } from "../../http/container";
import { nowInSeconds } from "../../http/datetime";
import { validate } from "../../http/validation";
import { requireToken } from "../../middleware/auth";
import { pageLocale } from "../../pages/locale";
import { PHONE_CODE_TEXT } from "../../pages/messages";
import { userSchema } from "../../schemas/responses/user";
import { canonicalPhoneNumber, phoneVerifySchema } from "../../schemas/user-profile";
import { keyRing, protectSecret, verifySecret } from "../../security/data-protection";
import { randomDigits } from "../../security/random-token";
import { sendText } from "../../sms/sender";
import { userView } from "../views/user";
import { callerAuthority, managedUser, requireAccountAuthority } from "./authority";

const CODE_DIGITS = 6;
export const PHONE_CODE_LIFETIME_SECONDS = 600;
const MAX_ATTEMPTS = 5;
/** A change sent again within this time texts no new code: a number is not flooded. */
const RESEND_AFTER_SECONDS = 60;
/** At most this many of a merchant's users are texted a code for one number per NUMBER_WINDOW_SECONDS. */
const CODES_PER_NUMBER = 3;
const NUMBER_WINDOW_SECONDS = 3600;

/** What a code is the keyed hash of: the user, the number and the code together. */
const codeText = (userId: number, phoneNumber: string, code: string) => `phone:${userId}:${phoneNumber}:${code}`;

/** The parameter's number, canonical; a 400 when it is none. */
function phoneNumberOf(value: string): string {
  const number = canonicalPhoneNumber(value);
  if (number === null) {
    throw new ApiError(400, "invalid_request", "Parameter 'phoneNumber' is not a phone number: + and 8 to 15 digits");
  }
  return number;
}

/** A phone number change: a new number to text a code to, or back to the user's own, which withdraws a waiting one. */
export type PhoneChange = { kind: "change" | "withdraw"; phoneNumber: string };

/**
 * The change asked for, after the caller's authority and the user's state are checked; null when
 * the number is the user's verified primary one and no change waits.
 */
export async function phoneChangeOf(
  c: Context<AppEnv>,
  authority: Actor,
  profile: UserProfile,
  phoneNumber: string,
): Promise<PhoneChange | null> {
  requireAccountAuthority(authority, profile);
  const number = phoneNumberOf(phoneNumber);
  if (number === profile.user.phoneNumber && profile.user.phoneNumberVerified !== null) {
    const waiting = await findPhoneVerification(c.get("db")(), profile.user.id);
    return waiting ? { kind: "withdraw", phoneNumber: number } : null;
  }
  if (REFUSED_USER_STATUSES[profile.user.status]) {
    throw new ApiError(409, "invalid_request", "The user cannot sign in: their phone number does not change");
  }
  return { kind: "change", phoneNumber: number };
}

/**
 * The writes of a phone number change, for the update's batch (the last one answers whether the
 * change was written), and the code to text once they are made. A withdrawal ends the waiting
 * change and the number it left unverified.
 */
export async function phoneChangeWrites(c: Context<AppEnv>, authority: Actor, userId: number, change: PhoneChange) {
  const db = c.get("db")();
  const now = nowInSeconds();
  const { phoneNumber } = change;
  if (change.kind === "withdraw") {
    return { code: null, writes: [dropUnconfirmedPhone(db, userId, phoneNumber), endPhoneVerification(db, userId)] };
  }
  const [earlier, texted] = await Promise.all([
    findPhoneVerification(db, userId),
    codesTextedTo(db, authority.merchantId, phoneNumber, now - NUMBER_WINDOW_SECONDS),
  ]);
  if (earlier && earlier.expires > now && now - earlier.created < RESEND_AFTER_SECONDS) throw textedRecently();
  if (texted >= CODES_PER_NUMBER) {
    throw new ApiError(
      409,
      "invalid_request",
      `This number was texted codes for ${CODES_PER_NUMBER} users in the last hour: try again later`,
    );
  }
  const code = randomDigits(CODE_DIGITS);
  const codeHash = await protectSecret(keyRing(c.env), codeText(userId, phoneNumber, code));
  const verification = { userId, clientId: authority.clientId, merchantId: authority.merchantId, phoneNumber };
  const started = { ...verification, codeHash, created: now, expires: now + PHONE_CODE_LIFETIME_SECONDS };
  return {
    code: { code, codeHash },
    writes: [
      dropUnconfirmedPhone(db, userId, phoneNumber),
      addUnverifiedPhone(db, userId, phoneNumber),
      startPhoneVerification(db, started, RESEND_AFTER_SECONDS),
    ],
  };
}

const textedRecently = () =>
  new ApiError(
    409,
    "invalid_request",
    "A code was texted for this user less than a minute ago: send the change again in a minute",
  );

/**
 * Texts the code, when the batch wrote its change (`written`: a racing change may have won); a
 * code that could not go out answers so, and sending the change again sends a new one.
 */
export async function textPhoneCode(
  c: Context<AppEnv>,
  profile: UserProfile,
  phoneNumber: string,
  { code, codeHash }: { code: string; codeHash: string },
  written: boolean,
) {
  if (!written) throw textedRecently();
  const client = await findClient(c.get("db")(), c.get("caller").clientId);
  const locale = pageLocale(profile.user.locale ?? "en_US", undefined);
  if (!(await sendText(c.env, phoneNumber, PHONE_CODE_TEXT[locale](code, client?.name ?? "Accounts")))) {
    await endPhoneVerification(c.get("db")(), profile.user.id, codeHash)
      .run()
      .catch(() => undefined);
    throw new TryAgainLater("The number waits for its code, but the code was not sent; send the change again", 5);
  }
}

const wrongCode = (left: number) =>
  new ApiError(
    400,
    "invalid_request",
    left > 0
      ? `The code is not the one texted to this number (${left} ${left === 1 ? "try" : "tries"} left)`
      : "The code is not the one texted to this number, and no tries are left: send the change again",
  );

export const userPhoneRoutes = new Hono<AppEnv>().post(
  "/user/:userId/phone/verify",
  describeRoute({
    name: "Verify a user's new phone number",
    controller: "api/manage/user-phone#verify",
    description:
      "`phoneNumber` and `code`: the 6-digit code texted when `phoneNumber` was sent to `POST /api/2/user/{userId}` (10 minutes, 5 tries, the newest change's only). The number then becomes the user's verified primary number (the old one stays as a secondary number) and the user's clients are told by callback (`phoneNumber`). The operator's client, or an admin client of the one merchant the user is connected to. 400 for a wrong code, 409 when no change waits.",
    success: { data: userSchema },
  }),
  requireToken("user/update", "server"),
  validate("form", phoneVerifySchema),
  async (c) => {
    const authority = await callerAuthority(c);
    const profile = await managedUser(c, authority);
    requireAccountAuthority(authority, profile);
    const form = c.req.valid("form");
    const phoneNumber = phoneNumberOf(form.phoneNumber);
    if (!new RegExp(`^\\d{${CODE_DIGITS}}$`).test(form.code)) {
      throw new ApiError(400, "invalid_request", `Parameter 'code' is not a ${CODE_DIGITS}-digit code`);
    }
    if (REFUSED_USER_STATUSES[profile.user.status]) {
      throw new ApiError(409, "invalid_request", "The user cannot sign in: their phone number does not change");
    }
    const db = c.get("db")();
    const now = nowInSeconds();
    const userId = profile.user.id;
    const attempt = await takePhoneAttempt(db, userId, now, MAX_ATTEMPTS);
    if (!attempt) {
      throw new ApiError(
        409,
        "invalid_request",
        "No phone number change waits for a code: it was confirmed, has expired or had too many wrong codes; send the change again",
      );
    }
    const proved =
      attempt.phoneNumber === phoneNumber &&
      (await verifySecret(keyRing(c.env), codeText(userId, phoneNumber, form.code), attempt.codeHash)) !== null;
    if (!proved) throw wrongCode(MAX_ATTEMPTS - attempt.attempts);
    const [told] = await db.batch([
      callbackRows(c, { userId, changedFields: ["phoneNumber"] }, now),
      auditEntry(c, authority, { action: "user.phone.verify", userId, detail: { fields: ["phoneNumber"] } }, now),
      ...makePrimaryPhone(db, userId, phoneNumber, attempt.codeHash, now),
      endPhoneVerification(db, userId, attempt.codeHash),
    ]);
    wakeSchedules(c, told);
    const changed = await readUserProfile(c.get("db"), userId, true);
    return respond(c, { object: "User", data: userView(changed ?? profile) });
  },
);
