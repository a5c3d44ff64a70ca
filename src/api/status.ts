/** GET /api/2/status: platform status, no token. */
import { Hono } from "hono";
import { configurationProblems } from "../configuration";
import type { AppEnv } from "../env";
import { describeRoute, type HeldForSecond, respond, respondSameForSecond } from "../http/container";
import { nowInSeconds } from "../http/datetime";
import { recentFaults } from "../platform/health";
import { SUPPORTED_GRANT_TYPES } from "../oauth/routes";
import { statusSchema } from "../schemas/responses/service";
import { versionObject } from "./version";

/**
 * The browser flows (docs/oauth.md "Browser flows"): `redirect` (a web site at /oauth/authorize),
 * `native` (an app at /oauth/authorize with PKCE, no secret), `webview` (a session code opened at
 * /oauth/webview).
 */
const SUPPORTED_FLOWS = ["redirect", "native", "webview"];

/** Only the answer of a well configured isolate is held: another names its problems, and is rare. */
const held: HeldForSecond = { second: -1, text: "" };

export const statusRoutes = new Hono<AppEnv>().get(
  "/status",
  describeRoute({ name: "Get status", controller: "api/status#show", success: { data: statusSchema } }),
  (c) => {
    const problems = configurationProblems(c.env);
    if (problems.length > 0) return respond(c, statusPayload(nowInSeconds(), "misconfigured", problems));
    const faults = recentFaults(Date.now());
    if (faults.length > 0) {
      const failed = faults.map((binding) => `${binding} failed a call in the last minute`);
      return respond(c, statusPayload(nowInSeconds(), "degraded", failed));
    }
    return respondSameForSecond(c, held, (now) => statusPayload(now, "up", []));
  },
);

/**
 * The spec's API status; `platform` is `up` when fully operational and, as the spec allows, another
 * value when not, with the problems: `misconfigured` (index.ts checks the configuration first), or
 * `degraded` while this isolate has lately seen a binding fail (platform/health.ts).
 */
function statusPayload(now: number, platform: "up" | "misconfigured" | "degraded", problems: readonly string[]) {
  return {
    object: "Status",
    data: {
      oauth: { flows: SUPPORTED_FLOWS.join("|"), grantTypes: SUPPORTED_GRANT_TYPES.join("|") },
      ...versionObject(now),
      block: false,
      platform,
      ...(problems.length > 0 && { problems }),
    },
  };
}
