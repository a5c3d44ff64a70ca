/**
 * GET /api/2/user/{userId}: one user, by userId or uuid. Server token. A user connected to the
 * calling client is shown in full; one connected only to other clients of the caller's merchant
 * in the spec's limited view; anyone else, as an unknown user, is a 404 (README "User by id").
 */
import { Hono } from "hono";
import { findUserConnections, findUserIdByUuid, findUserProfile } from "../db/queries/users";
import type { AppEnv } from "../env";
import { ApiError } from "../errors";
import { describeRoute, respond } from "../http/container";
import { requireToken } from "../middleware/auth";
import { limitedUserView, userView } from "./views/user";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const USER_ID = /^[1-9]\d{0,15}$/;

const notFound = () => new ApiError(404, "invalid_request", "User not found");

export const userRoutes = new Hono<AppEnv>().get(
  "/user/:userId",
  describeRoute("Get a user", "api/user#show"),
  requireToken("server"),
  async (c) => {
    const key = c.req.param("userId");
    const db = c.get("db");
    const userId = USER_ID.test(key)
      ? Number(key)
      : UUID.test(key)
        ? await findUserIdByUuid(db, key.toLowerCase())
        : undefined;
    if (userId === undefined || !Number.isSafeInteger(userId)) throw notFound();
    const caller = c.get("caller");
    const [clientIds, profile] = await Promise.all([
      findUserConnections(db, userId, caller.merchantId),
      findUserProfile(db, userId),
    ]);
    if (!profile || clientIds.length === 0) throw notFound();
    const connected = clientIds.includes(caller.clientId);
    return respond(c, { object: "User", data: connected ? userView(profile) : limitedUserView(profile) });
  },
);
