/**
 * GET /api/2/user/{userId}: one user, by userId or uuid. Server token. A user connected to the
 * calling client is shown in full; one connected only to other clients of the caller's merchant
 * in the spec's limited view; anyone else, as an unknown user, is a 404 (docs/api.md "User by id").
 */
import { Hono } from "hono";
import * as z from "zod/mini";
import { readUserProfile } from "../db/cached-reads";
import { findUserIdByUuid } from "../db/queries/users";
import type { AppEnv } from "../env";
import { ApiError } from "../errors";
import { describeRoute, respond } from "../http/container";
import { parseUserKey } from "../http/user-key";
import { requireToken } from "../middleware/auth";
import { limitedUserSchema, userSchema } from "../schemas/responses/user";
import { limitedUserView, userView } from "./views/user";

const notFound = () => new ApiError(404, "invalid_request", "User not found");

export const userRoutes = new Hono<AppEnv>().get(
  "/user/:userId",
  describeRoute({
    name: "Get a user",
    controller: "api/user#show",
    description:
      "`userId` is the userId or the uuid. Full view for a user of the calling client, limited (rule 2) for one of its merchant's other clients.",
    success: { data: z.union([userSchema, limitedUserSchema]) },
  }),
  requireToken("user", "server"),
  async (c) => {
    const key = parseUserKey(c.req.param("userId"));
    const db = c.get("db");
    const userId =
      key === undefined ? undefined : "userId" in key ? key.userId : await findUserIdByUuid(db(), key.uuid);
    if (userId === undefined) throw notFound();
    const caller = c.get("caller");
    const profile = await readUserProfile(db, userId, c.get("bookmarked"));
    const ofMerchant = profile?.connections.filter((connection) => connection.merchantId === caller.merchantId) ?? [];
    if (!profile || ofMerchant.length === 0) throw notFound();
    const connected = ofMerchant.some((connection) => connection.clientId === caller.clientId);
    return respond(c, { object: "User", data: connected ? userView(profile) : limitedUserView(profile) });
  },
);
