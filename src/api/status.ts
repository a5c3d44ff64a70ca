/** GET /api/2/status: platform status, no token. */
import { Hono } from "hono";
import type { AppEnv } from "../env";
import { describeRoute, respond } from "../http/container";
import { SUPPORTED_GRANT_TYPES } from "../oauth/routes";
import { statusSchema } from "../schemas/responses/service";
import { versionObject } from "./version";

/**
 * The browser flows (README "Browser flows"): `redirect` (a web site at /oauth/authorize),
 * `native` (an app at /oauth/authorize with PKCE, no secret), `webview` (a session code opened at
 * /oauth/webview).
 */
const SUPPORTED_FLOWS = ["redirect", "native", "webview"];

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
