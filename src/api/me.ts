/** GET /api/2/me: the User object of the token's own user. User token. */
import { type Context, Hono } from "hono";
import { readUserProfile } from "../db/cached-reads";
import { REFUSED_USER_STATUSES } from "../db/schema";
import type { AppEnv } from "../env";
import { ApiError } from "../errors";
import { describeRoute, respond } from "../http/container";
import { requireToken } from "../middleware/auth";
import { invalidTokenError } from "../oauth/tokens";
import { userSchema } from "../schemas/responses/user";
import { userView } from "./views/user";

export const meRoutes = new Hono<AppEnv>().get(
  "/me",
  describeRoute({ name: "Get current user", controller: "api/me#show", success: { data: userSchema } }),
  requireToken("me", "user"),
  (c) => respondWithOwnUser(c, c.get("caller").userId!),
);

/**
 * The User object of a user token's own user, in full (GET /me, and GET /user/{userId} with a
 * user token); a user deleted or blocked since the token was issued ends the token.
 */
export async function respondWithOwnUser(c: Context<AppEnv>, userId: number): Promise<Response> {
  const profile = await readUserProfile(c.get("db"), userId, c.get("bookmarked"));
  if (!profile) throw new ApiError(404, "invalid_request", "User not found");
  const refusal = REFUSED_USER_STATUSES[profile.user.status];
  if (refusal) {
    throw invalidTokenError(`The access token is no longer valid: the user account is ${refusal}`, "revoked");
  }
  return respond(c, { object: "User", data: userView(profile) });
}
