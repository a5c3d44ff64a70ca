/**
 * Creating a user and changing a user's profile (SPiD's `POST /user` and `POST /user/{userId}`;
 * docs/management.md "Creating a user", "Changing a profile"): form fields as SPiD takes them,
 * only the fields sent written, each write one D1 batch with its audit entry.
 */
import { type Context, Hono } from "hono";
import { readUserProfile } from "../../db/cached-reads";
import { violatesUnique } from "../../db/constraints";
import { type ClientRecord, findClient } from "../../db/queries/clients";
import { changedFields, insertUser, updateUserProfile } from "../../db/queries/user-profile";
import { withdrawUserLinks } from "../../db/queries/signin-requests";
import {
  addUnverifiedEmail,
  dropUnconfirmedEmails,
  findAddressOwner,
  findUserIdByUuid,
  makePrimaryEmail,
  newUserId,
  type UserProfile,
} from "../../db/queries/users";
import { REFUSED_USER_STATUSES } from "../../db/schema";
import type { AppEnv } from "../../env";
import { ApiError, TryAgainLater } from "../../errors";
import { type Actor, auditEntry } from "../../events/audit";
import { callbackRows, wakeSchedules } from "../../events/callbacks";
import { describeRoute, respond } from "../../http/container";
import { nowInSeconds } from "../../http/datetime";
import {
  earlierResource,
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_PARAMETER,
  idempotencyOf,
  keyRecord,
} from "../../http/idempotency";
import { validate } from "../../http/validation";
import { requireToken } from "../../middleware/auth";
import { isRegisteredRedirectUri } from "../../oauth/redirect-uri";
import { linkAuthorization, requestSignInLink } from "../../oauth/signin-links";
import { pageLocale } from "../../pages/locale";
import { ADDRESS_CHANGE_CONTEXT } from "../../pages/messages";
import { canonicalEmailAddress } from "../../schemas/email-address";
import { userSchema } from "../../schemas/responses/user";
import { profileFieldsOf, userCreateSchema, userUpdateSchema } from "../../schemas/user-profile";
import { USER_STATUS } from "../../schemas/value-sets";
import { userView } from "../views/user";
import { callerAuthority, managedUser, requireAccountAuthority } from "./authority";
import { phoneChangeOf, phoneChangeWrites, textPhoneCode } from "./user-phone";

const PROFILE_FIELDS =
  "`displayName`, `preferredUsername`, `url`, `photo`, `gender`, `birthday` (YYYY-MM-DD), `locale`, `utcOffset` (+01:00), `name` (JSON: givenName, familyName, formatted) and `addresses` (JSON: type → address, null removes the type)";

const notAvailable = () => new ApiError(409, "invalid_request", "The email address is not available");

/** The user `userId` (or the one whose uuid it is) as the API shows it now, fresh from D1. */
async function respondWithUser(c: Context<AppEnv>, user: number | { uuid: string }, status = 200) {
  const userId = typeof user === "number" ? user : await findUserIdByUuid(c.get("db")(), user.uuid);
  const profile = userId === undefined ? undefined : await readUserProfile(c.get("db"), userId, true);
  if (!profile) throw new ApiError(404, "invalid_request", "User not found");
  return respond(c, { object: "User", data: userView(profile) }, status);
}

/**
 * An address change (docs/management.md "Changing an address"): `proved` when the address is the
 * user's and verified already (it becomes primary at once); `added` for a new address; `pending`
 * for one of the user's still unverified (its link is sent again). Null when it is the primary.
 */
type AddressChange = { kind: "proved" | "added" | "pending"; email: string; client: ClientRecord; redirectUri: string };

async function addressChangeOf(
  c: Context<AppEnv>,
  authority: Actor,
  profile: UserProfile,
  form: { email?: string | undefined; redirectUri?: string | undefined },
): Promise<AddressChange | null> {
  requireAccountAuthority(authority, profile);
  const email = canonicalEmailAddress(form.email ?? "");
  if (email === null) throw new ApiError(400, "invalid_request", "Parameter 'email' is not an e-mail address");
  if (email === profile.user.email) return null;
  if (REFUSED_USER_STATUSES[profile.user.status]) {
    throw new ApiError(409, "invalid_request", "The user cannot sign in: no address of theirs is confirmed");
  }
  if (form.redirectUri === undefined) {
    throw new ApiError(400, "invalid_request", "Parameter 'redirectUri' is missing: the confirmation link leads there");
  }
  const db = c.get("db")();
  const [client, owner] = await Promise.all([findClient(db, authority.clientId), findAddressOwner(db, email)]);
  if (!client || !isRegisteredRedirectUri(client.redirectUris, form.redirectUri, client.publicClient)) {
    throw new ApiError(
      400,
      "redirect_uri_mismatch",
      "Parameter 'redirectUri' is not registered for the calling client",
    );
  }
  if (owner && owner.user.id !== profile.user.id) throw notAvailable();
  const kind = owner === undefined ? "added" : owner.verified ? "proved" : "pending";
  return { kind, email, client, redirectUri: form.redirectUri };
}

/**
 * Mails the link that confirms the new address; a change whose link could not go out answers so,
 * and sending the change again sends it (the address waits, unverified, meanwhile).
 */
async function mailConfirmation(c: Context<AppEnv>, profile: UserProfile, change: AddressChange, now: number) {
  const locale = pageLocale(profile.user.locale ?? "en_US", undefined);
  const sent = await requestSignInLink(
    c.env,
    c.get("db")(),
    {
      client: change.client,
      email: change.email,
      redirectUri: change.redirectUri,
      // The browser that confirms is signed in for its session only.
      remember: false,
      context: ADDRESS_CHANGE_CONTEXT[locale],
      locale,
      authorization: linkAuthorization(change.client.id, change.redirectUri),
      confirms: { userId: profile.user.id },
    },
    now,
    c.executionCtx,
  );
  if (sent.outcome === "sent") return;
  if (sent.outcome === "too_soon") {
    throw new ApiError(
      409,
      "invalid_request",
      "The address waits for its confirmation, but the link was not sent: the user was sent a link less than a minute ago; send the change again in a minute",
    );
  }
  throw new TryAgainLater(
    "The address waits for its confirmation, but the link was not sent; send the change again",
    "retryAfter" in sent ? sent.retryAfter : 5,
  );
}

export const userProfileRoutes = new Hono<AppEnv>()
  .post(
    "/user",
    describeRoute({
      name: "Create a user",
      controller: "api/manage/user-profile#create",
      description: `SPiD's create: \`email\` (required; unique across the service), the profile's fields (${PROFILE_FIELDS}), and \`redirectUri\` (registered for the calling client: the new address is mailed a sign-in link that confirms it and leads there). The user is unverified (status 0), has no password, and is connected to the calling client. 409 "The email address is not available". With an \`${IDEMPOTENCY_KEY_HEADER}\` header, a retry of the same request answers the user the first made; the same key with another request is a 422.`,
      parameters: [IDEMPOTENCY_KEY_PARAMETER],
      success: { status: 201, data: userSchema },
    }),
    requireToken("user/create", "server"),
    validate("form", userCreateSchema),
    async (c) => {
      const form = c.req.valid("form");
      const email = canonicalEmailAddress(form.email);
      if (email === null) throw new ApiError(400, "invalid_request", "Parameter 'email' is not an e-mail address");
      const authority = await callerAuthority(c);
      const db = c.get("db")();
      const now = nowInSeconds();
      const idempotency = await idempotencyOf(c, authority.clientId);
      // A retry of a create that was made answers what it made; checked again after any refusal
      // below, as a racing request with the same key may have made it meanwhile.
      const madeBefore = async () => {
        const resource = await earlierResource(db, idempotency, now);
        return resource === undefined ? undefined : respondWithUser(c, { uuid: resource.slice("user:".length) }, 201);
      };
      const repeated = await madeBefore();
      if (repeated) return repeated;
      const addressTaken = async () => {
        const earlier = await madeBefore();
        if (earlier) return earlier;
        throw notAvailable();
      };

      const client = await findClient(db, authority.clientId);
      if (!client) throw new ApiError(404, "invalid_request", "Unknown client ID");
      if (
        form.redirectUri !== undefined &&
        !isRegisteredRedirectUri(client.redirectUris, form.redirectUri, client.publicClient)
      ) {
        throw new ApiError(
          400,
          "redirect_uri_mismatch",
          "Parameter 'redirectUri' is not registered for the calling client",
        );
      }
      if (await findAddressOwner(db, email)) return addressTaken();
      const uuid = crypto.randomUUID();
      const profile = profileFieldsOf(form);
      const userId = newUserId(uuid);
      let created: number;
      try {
        const [[inserted]] = await db.batch([
          ...insertUser(db, { uuid, email, profile, client, now }),
          auditEntry(c, authority, { action: "user.create", userId, detail: { fields: changedFields(profile) } }, now),
          ...keyRecord(db, idempotency, `user:${uuid}`, now),
        ]);
        created = inserted!.id;
      } catch (err) {
        // The same key's racing request, or another's, took the key or the address first.
        if (!violatesUnique(err, "idempotency_keys") && !violatesUnique(err, "user_emails.value")) throw err;
        return addressTaken();
      }
      if (form.redirectUri !== undefined) {
        await requestSignInLink(
          c.env,
          db,
          {
            client,
            email,
            redirectUri: form.redirectUri,
            remember: true,
            context: null,
            locale: pageLocale(form.locale ?? "en_US", undefined),
            authorization: linkAuthorization(client.id, form.redirectUri),
          },
          now,
          c.executionCtx,
        );
      }
      return respondWithUser(c, created, 201);
    },
  )
  .post(
    "/user/:userId",
    describeRoute({
      name: "Change a user's profile",
      controller: "api/manage/user-profile#update",
      description: `SPiD's update: only the fields sent change (${PROFILE_FIELDS}); an empty value clears a text field. \`email\` with \`redirectUri\` (registered for the calling client) changes the user's sign-in address: the new address is added unverified and mailed a link that confirms it, and becomes the primary address when used (at once when it is already the user's, verified). \`phoneNumber\` (E.164) adds the number unverified and texts it a 6-digit code, which \`POST /api/2/user/{userId}/phone/verify\` takes. Only the operator's client, or an admin client of the one merchant the user is connected to, changes an address or a number. The password is the user's own to change (400). A client changes the users connected to it; an admin client its merchant's; the operator's client any. A deleted user is a 409.`,
      success: { data: userSchema },
    }),
    requireToken("user/update", "server"),
    validate("form", userUpdateSchema),
    async (c) => {
      const authority = await callerAuthority(c);
      const profile = await managedUser(c, authority);
      if (
        authority.actor === "client" &&
        !profile.connections.some(({ clientId }) => clientId === authority.clientId)
      ) {
        throw new ApiError(403, "access_denied", "Client is not authorized to access this user");
      }
      if (profile.user.status === USER_STATUS.deleted) {
        throw new ApiError(409, "invalid_request", "The user is deleted: a deleted account's profile does not change");
      }
      const form = c.req.valid("form");
      const fields = profileFieldsOf(form);
      const addressChange = form.email === undefined ? null : await addressChangeOf(c, authority, profile, form);
      const phoneChange =
        form.phoneNumber === undefined ? null : await phoneChangeOf(c, authority, profile, form.phoneNumber);
      const changed = changedFields(fields);
      // Told to the clients now: the profile's fields, and an address already proved; a new one
      // when its link is used (oauth/signin-links.ts).
      const told = [...changed, ...(addressChange?.kind === "proved" ? ["email"] : [])];
      if (told.length === 0 && addressChange === null && phoneChange === null) {
        throw new ApiError(400, "invalid_request", "No field to change was sent");
      }
      const now = nowInSeconds();
      const db = c.get("db")();
      const userId = profile.user.id;
      const phone = phoneChange === null ? null : await phoneChangeWrites(c, authority, userId, phoneChange);
      const batch = db.batch([
        callbackRows(c, { userId, changedFields: told }, now),
        auditEntry(
          c,
          authority,
          {
            action: "user.update",
            userId,
            detail: {
              fields: [...changed, ...(addressChange ? ["email"] : []), ...(phoneChange ? ["phoneNumber"] : [])],
              ...(addressChange && { email: addressChange.kind }),
              ...(phoneChange && { phoneNumber: phoneChange.kind === "change" ? "pending" : "withdrawn" }),
            },
          },
          now,
        ),
        ...updateUserProfile(db, userId, fields, now),
        ...(addressChange?.kind === "proved" ? makePrimaryEmail(db, userId, addressChange.email, now, true) : []),
        ...(addressChange?.kind === "added" ? [addUnverifiedEmail(db, userId, addressChange.email)] : []),
        // Only the newest change confirms: an earlier change's address and link, or any live
        // link of the user's, end.
        ...(addressChange
          ? [dropUnconfirmedEmails(db, userId, addressChange.email), withdrawUserLinks(db, userId)]
          : []),
        ...(phone?.writes ?? []),
      ]);
      let toldClients: { clientId: string }[];
      let phoneWritten = false;
      try {
        const results = await batch;
        toldClients = results[0];
        // A change's last write answers whether it was written (user-phone.ts phoneChangeWrites).
        phoneWritten = phone?.code ? (results.at(-1) as unknown[]).length > 0 : false;
      } catch (err) {
        // Another user took the address since it was looked at.
        if (violatesUnique(err, "user_emails.value")) throw notAvailable();
        throw err;
      }
      wakeSchedules(c, toldClients);
      if (addressChange && addressChange.kind !== "proved") await mailConfirmation(c, profile, addressChange, now);
      if (phone?.code) await textPhoneCode(c, profile, phoneChange!.phoneNumber, phone.code, phoneWritten);
      return respondWithUser(c, userId);
    },
  );
