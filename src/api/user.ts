/**
 * GET /api/2/user/{userId}: one user, by userId or uuid. With a server token, a user connected to
 * the calling client is shown in full; one connected only to other clients of the caller's merchant
 * in the spec's limited view; anyone else, as an unknown user, is a 404 (docs/api.md "User by id").
 * A user token sees its own user only, as GET /me does (SPiD's server and user tokens).
 */
import { Hono } from "hono";
import * as z from "zod/mini";
import { readUserProfile } from "../db/cached-reads";
import type { AppEnv } from "../env";
import { ApiError } from "../errors";
import { describeRoute, respond } from "../http/container";
import { requireToken } from "../middleware/auth";
import { limitedUserSchema, userSchema } from "../schemas/responses/user";
import { respondWithOwnUser } from "./me";
import { pathUser } from "./path-user";
import { limitedUserView, userView } from "./views/user";

const notFound = () => new ApiError(404, "invalid_request", "User not found");

export const userRoutes = new Hono<AppEnv>().get(
  "/user/:userId",
  describeRoute({
    name: "Get a user",
    controller: "api/user#show",
    description:
      '`userId` is the userId or the uuid. Server token: full view for a user of the calling client, limited (rule 2) for one of its merchant\'s other clients. User token: its own user only, in full (another is 403 "Token is not authorized to access this user").',
    success: { data: z.union([userSchema, limitedUserSchema]) },
  }),
  requireToken("user", "any"),
  async (c) => {
    const userId = await pathUser(c);
    if (userId === undefined) throw notFound();
    const caller = c.get("caller");
    if (caller.kind === "user") return respondWithOwnUser(c, userId);
    const db = c.get("db");
    const profile = await readUserProfile(db, userId, c.get("bookmarked"));
    const ofMerchant = profile?.connections.filter((connection) => connection.merchantId === caller.merchantId) ?? [];
    if (!profile || ofMerchant.length === 0) throw notFound();
    const connected = ofMerchant.some((connection) => connection.clientId === caller.clientId);
    return respond(c, { object: "User", data: connected ? userView(profile) : limitedUserView(profile) });
  },
);
