/** GET /api/2/status: platform status, no token. */
import { Hono } from "hono";
import type { AppEnv } from "../env";
import { describeRoute, type HeldForSecond, respondSameForSecond } from "../http/container";
import { SUPPORTED_GRANT_TYPES } from "../oauth/routes";
import { statusSchema } from "../schemas/responses/service";
import { versionObject } from "./version";

/**
 * The browser flows (README "Browser flows"): `redirect` (a web site at /oauth/authorize),
 * `native` (an app at /oauth/authorize with PKCE, no secret), `webview` (a session code opened at
 * /oauth/webview).
 */
const SUPPORTED_FLOWS = ["redirect", "native", "webview"];

const held: HeldForSecond = { second: -1, text: "" };

export const statusRoutes = new Hono<AppEnv>().get(
  "/status",
  describeRoute({ name: "Get status", controller: "api/status#show", success: { data: statusSchema } }),
  (c) =>
    respondSameForSecond(c, held, (now) => ({
      object: "Status",
      data: {
        oauth: { flows: SUPPORTED_FLOWS.join("|"), grantTypes: SUPPORTED_GRANT_TYPES.join("|") },
        ...versionObject(now),
        block: false,
        platform: "up",
      },
    })),
);
