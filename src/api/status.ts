/** GET /api/2/status: platform status, no token. */
import { Hono } from "hono";
import type { AppEnv } from "../env";
import { describeRoute, respond } from "../http/container";
import { SUPPORTED_GRANT_TYPES } from "../oauth/routes";
import { statusSchema } from "../schemas/responses/service";
import { versionObject } from "./version";

/** Browser flows come with the authorization endpoint; until then none is offered. */
const SUPPORTED_FLOWS: string[] = [];

export const statusRoutes = new Hono<AppEnv>().get(
  "/status",
  describeRoute({ name: "Get status", controller: "api/status#show", success: { data: statusSchema } }),
  (c) =>
    respond(c, {
      object: "Status",
      data: {
        oauth: { flows: SUPPORTED_FLOWS.join("|"), grantTypes: SUPPORTED_GRANT_TYPES.join("|") },
        ...versionObject(),
        block: false,
        platform: "up",
      },
    }),
);
