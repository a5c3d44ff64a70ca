/**
 * Managing a user while the service runs (docs/management.md): the account's status, signing the
 * user out everywhere, and withdrawing the user's connection (consent) to a client. Each write is
 * one D1 batch with its audit entry; the revocations a change needs go out before it (oauth/sign-out.ts).
 */
import { Hono } from "hono";
import type { ClientScope } from "../../db/queries/clients";
import type { UserProfile } from "../../db/queries/users";
import { readUserProfile } from "../../db/cached-reads";
import { eraseUser } from "../../db/queries/erasure";
import { findUserRecords } from "../../db/queries/export";
import { listMails } from "../../db/queries/mails";
import { disconnectUser, updateUserStatus } from "../../db/queries/users";
import type { AppEnv } from "../../env";
import { ApiError } from "../../errors";
import { auditEntry } from "../../events/audit";
import { callbackRows, wakeSchedules } from "../../events/callbacks";
import { describeRoute, respond } from "../../http/container";
import { nowInSeconds } from "../../http/datetime";
import type { Parameter } from "../../http/openapi";
import { validate } from "../../http/validation";
import { requireToken } from "../../middleware/auth";
import { signOutSite, signOutUser } from "../../oauth/sign-out";
import { userStatusRequestSchema } from "../../schemas/management";
import { signOutSchema, userExportSchema } from "../../schemas/responses/management";
import { userSchema } from "../../schemas/responses/user";
import { USER_STATUS } from "../../schemas/value-sets";
import { userExportView } from "../views/user-export";
import { userView } from "../views/user";
import {
  callerAuthority,
  managedClients,
  managedUser,
  requireAccountAuthority,
  requireAdministration,
} from "./authority";

const CLIENT_SCOPE: Parameter[] = [
  {
    name: "clientId",
    in: "query",
    description:
      "One client to act at. Without it: the calling client; every client of its merchant for an admin client; every client for the operator",
    schema: { type: "string" },
  },
];

/** The status a name sets: `active` is verified when the user ever was (`verified`), else unverified. */
function statusOf(name: "active" | "blocked" | "inactive", profile: UserProfile): number {
  if (name === "blocked") return USER_STATUS.blocked;
  if (name === "inactive") return USER_STATUS.inactive;
  return profile.user.verified === null ? USER_STATUS.unverified : USER_STATUS.verified;
}

/** The most mails an export carries, newest first: the mail history's own bound ten times over. */
const MAX_EXPORTED_MAILS = 1_000;

/**
 * Whether the account was ever verified (an address, a phone, or as imported): an account anyone
 * could have made for someone else's address has not.
 */
function provedAnAddress({ user, emails }: UserProfile): boolean {
  return user.verified !== null || user.emailVerified !== null || emails.some((email) => email.verified);
}

/** Nothing personal is left: a deleted account without addresses, numbers or names. */
function isErased({ user, emails, phoneNumbers, addresses, accounts }: UserProfile): boolean {
  const parts = emails.length + phoneNumbers.length + addresses.length + accounts.length;
  return user.status === USER_STATUS.deleted && parts === 0 && user.email === null && user.passwordHash === null;
}

function withinScope(connection: { clientId: string; merchantId: number }, scope: ClientScope): boolean {
  if (scope === null) return true;
  return "clientId" in scope ? connection.clientId === scope.clientId : connection.merchantId === scope.merchantId;
}

export const userManagementRoutes = new Hono<AppEnv>()
  .post(
    "/user/:userId/status",
    describeRoute({
      name: "Change a user's status",
      controller: "api/manage/user#status",
      description:
        "`status`: `blocked`, `inactive` or `active` (unblock: verified when the user has been verified, else unverified). Blocking or deactivating signs the user out everywhere (sessions, refresh tokens, access tokens, back-channel logout notices). The operator's client, or an admin client of the one merchant the user is connected to. A deleted user's status does not change (409).",
      success: { data: userSchema },
    }),
    requireToken("user/status", "server"),
    validate("form", userStatusRequestSchema),
    async (c) => {
      const authority = await callerAuthority(c);
      const profile = await managedUser(c, authority);
      requireAccountAuthority(authority, profile);
      const { user } = profile;
      if (user.status === USER_STATUS.deleted) {
        throw new ApiError(409, "invalid_request", "The user is deleted: a deleted account's status does not change");
      }
      const status = statusOf(c.req.valid("form").status, profile);
      if (status < USER_STATUS.unverified && authority.actor !== "operator" && !provedAnAddress(profile)) {
        throw new ApiError(
          403,
          "access_denied",
          "Client or merchant is not authorized to access this user: the account never proved an address, so blocking it would keep the address from its owner; erase the account instead, or ask the operator",
        );
      }
      if (status === user.status) return respond(c, { object: "User", data: userView(profile) });
      const now = nowInSeconds();
      const signOut =
        status < USER_STATUS.unverified ? await signOutUser(signOutSite(c), user.id, null, now) : undefined;
      const db = c.get("db")();
      const [told] = await db.batch([
        callbackRows(c, { userId: user.id, changedFields: ["status"] }, now),
        updateUserStatus(db, user.id, status, now),
        ...(signOut?.writes ?? []),
        auditEntry(
          c,
          authority,
          {
            action: "user.status",
            userId: user.id,
            detail: {
              status: { from: user.status, to: status },
              ...(signOut && { sessions: signOut.sessions, grants: signOut.grants }),
            },
          },
          now,
        ),
      ]);
      wakeSchedules(c, told);
      return respond(c, { object: "User", data: userView({ ...profile, user: { ...user, status, updated: now } }) });
    },
  )
  .post(
    "/user/:userId/logout",
    describeRoute({
      name: "Sign a user out everywhere",
      controller: "api/manage/user#logout",
      description:
        "Ends the user's browser sessions started through the clients in scope, revokes their refresh tokens and the access tokens issued under them, and sends back-channel logout notices. Answers how many sessions and grants it ended.",
      parameters: CLIENT_SCOPE,
      success: { data: signOutSchema },
    }),
    requireToken("user/logout", "server"),
    async (c) => {
      const authority = await callerAuthority(c);
      const profile = await managedUser(c, authority);
      const scope = await managedClients(c, authority, c.req.queries("clientId"));
      const now = nowInSeconds();
      const userId = profile.user.id;
      const signOut = await signOutUser(signOutSite(c), userId, scope, now);
      const db = c.get("db")();
      const reach = { sessions: signOut.sessions, grants: signOut.grants };
      await db.batch([
        auditEntry(c, authority, { action: "user.logout", userId, detail: { scope, ...reach } }, now),
        ...signOut.writes,
      ]);
      return respond(c, { object: "UserLogout", data: { userId: String(userId), ...reach } });
    },
  )
  .delete(
    "/user/:userId/connection",
    describeRoute({
      name: "Withdraw a user's connection to a client",
      controller: "api/manage/user#disconnect",
      description:
        "Withdraws the user's consent to the clients in scope: the user is no longer theirs (not listed, not shown), its grants there end (refresh and access tokens; back-channel logout notices) and the next sign-in asks for consent again. The user's own token withdraws from its own client. Digital-content grants and mail history are kept.",
      parameters: CLIENT_SCOPE,
      success: { data: signOutSchema },
    }),
    requireToken("user/connection", "any"),
    async (c) => {
      const authority = await callerAuthority(c);
      const profile = await managedUser(c, authority);
      const scope = await managedClients(c, authority, c.req.queries("clientId"));
      if (!profile.connections.some((connection) => withinScope(connection, scope))) {
        throw new ApiError(404, "invalid_request", "The user is not connected to the client");
      }
      const now = nowInSeconds();
      const userId = profile.user.id;
      const signOut = await signOutUser(signOutSite(c), userId, scope, now, { sessions: false });
      const db = c.get("db")();
      // The clients losing the user are told before the connection goes.
      const [told] = await db.batch([
        callbackRows(c, { userId, changedFields: ["connection"], scope }, now),
        disconnectUser(db, userId, scope),
        ...signOut.writes,
        auditEntry(
          c,
          authority,
          { action: "user.connection.withdraw", userId, detail: { scope, grants: signOut.grants } },
          now,
        ),
      ]);
      wakeSchedules(c, told);
      return respond(c, {
        object: "UserLogout",
        data: { userId: String(userId), sessions: 0, grants: signOut.grants },
      });
    },
  )
  .delete(
    "/user/:userId",
    describeRoute({
      name: "Erase a user",
      controller: "api/manage/user#erase",
      description:
        "GDPR art. 17. Removes the user's personal data (names, addresses, e-mail addresses and phone numbers, password, devices, mail history, pending sign-in links) and keeps the account as deleted (status -3, `published` false) under the same userId and uuid; every session and grant ends, with back-channel logout notices. Connections, digital-content grants and the audit trail stay, holding no personal data. The operator's client, or an admin client of the one merchant the user is connected to. Erasing again answers the same.",
      success: { data: userSchema },
    }),
    requireToken("user/erase", "server"),
    async (c) => {
      const authority = await callerAuthority(c);
      const profile = await managedUser(c, authority);
      requireAccountAuthority(authority, profile);
      if (!isErased(profile)) {
        const now = nowInSeconds();
        const userId = profile.user.id;
        // The notices and access tokens first; the sessions and refresh tokens go with the erasure.
        const signOut = await signOutUser(signOutSite(c), userId, null, now);
        const db = c.get("db")();
        const [told] = await db.batch([
          callbackRows(c, { userId, changedFields: ["status"] }, now),
          ...eraseUser(db, userId, now, signOut.endedSelfContained),
          auditEntry(
            c,
            authority,
            { action: "user.erase", userId, detail: { sessions: signOut.sessions, grants: signOut.grants } },
            now,
          ),
        ]);
        wakeSchedules(c, told);
      }
      const erased = await readUserProfile(c.get("db"), profile.user.id, true);
      return respond(c, { object: "User", data: userView(erased!) });
    },
  )
  .get(
    "/user/:userId/export",
    describeRoute({
      name: "Export a user's data",
      controller: "api/manage/user#export",
      description:
        "GDPR art. 15 and 20: everything held about the user as JSON: the User object, connections, browser sessions, grants (never a token), devices, digital contents, the mail history and the audit entries about the user (of sessions, grants, mails and audit entries the 1,000 newest). The operator's client gets everything; an admin client what its merchant holds; the user's own token what its client holds. Recorded in the audit trail (`user.export`).",
      success: { data: userExportSchema },
    }),
    requireToken("user/export", "any"),
    async (c) => {
      const authority = await callerAuthority(c);
      if (authority.actor !== "user") requireAdministration(authority);
      const profile = await managedUser(c, authority);
      // The operator: everything; an admin client: its merchant's; a user's own token: its client's.
      const scope: ClientScope =
        authority.actor === "operator"
          ? null
          : authority.actor === "admin"
            ? { merchantId: authority.merchantId }
            : { clientId: authority.clientId };
      const db = c.get("db")();
      const userId = profile.user.id;
      const [held, mails] = await Promise.all([
        findUserRecords(db, userId, scope),
        listMails(db, userId, MAX_EXPORTED_MAILS, scope),
      ]);
      // A read of everything about a person is recorded like a change.
      await auditEntry(c, authority, { action: "user.export", userId, detail: { scope } }, nowInSeconds()).run();
      return respond(c, { object: "UserExport", data: userExportView(profile, held, mails) });
    },
  );
