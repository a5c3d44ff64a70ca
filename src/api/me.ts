/** GET /api/2/me: the User object of the token's own user. User token. */
import { Hono } from "hono";
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
  async (c) => {
    const profile = await readUserProfile(c.get("db"), c.get("caller").userId!, c.get("bookmarked"));
    if (!profile) throw new ApiError(404, "invalid_request", "User not found");
    const refusal = REFUSED_USER_STATUSES[profile.user.status];
    if (refusal) {
      throw invalidTokenError(`The access token is no longer valid: the user account is ${refusal}`, "revoked");
    }
    return respond(c, { object: "User", data: userView(profile) });
  },
);
