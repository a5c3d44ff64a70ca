/**
 * The user a path names (`/user/{userId}/...`: the userId or the uuid, never the legacy id), and
 * who may name them: a server token any user (its endpoint then decides what it shows), a user
 * token only its own user (spid-tech-docs `cached-endpoints.edn`: "Token is not authorized to
 * access this user").
 */
import type { Context } from "hono";
import { findUserIdByUuid } from "../db/queries/users";
import type { AppEnv } from "../env";
import { ApiError } from "../errors";
import { parseUserKey } from "../http/user-key";

/** The path's user, or undefined when no user has that id or uuid; another user than a user token's own is a 403. */
export async function pathUser(c: Context<AppEnv>): Promise<number | undefined> {
  const key = parseUserKey(c.req.param("userId") ?? "");
  const userId =
    key === undefined ? undefined : "userId" in key ? key.userId : await findUserIdByUuid(c.get("db")(), key.uuid);
  const caller = c.get("caller");
  // Refused whether or not the user exists: a user token learns nothing about other users.
  if (caller.kind === "user" && userId !== caller.userId) {
    throw new ApiError(403, "access_denied", "Token is not authorized to access this user");
  }
  return userId;
}
