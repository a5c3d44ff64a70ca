/** GET /api/2/version: the version object, no token. */
import { Hono } from "hono";
import * as z from "zod/mini";
import type { AppEnv } from "../env";
import { API_VERSION, describeRoute, type HeldForSecond, respondSameForSecond } from "../http/container";
import { formatDatetime, TIME_ZONE } from "../http/datetime";
import { versionSchema } from "../schemas/responses/service";

export const WEB_VERSION = "2.14.0";

export function versionObject(now: number): z.infer<typeof versionSchema> {
  return {
    apiVersion: API_VERSION,
    apiRevision: "0",
    webVersion: WEB_VERSION,
    webRevision: "0",
    currentTime: formatDatetime(now),
    timeZone: TIME_ZONE,
  };
}

const held: HeldForSecond = { second: -1, text: "" };

export const versionRoutes = new Hono<AppEnv>().get(
  "/version",
  describeRoute({ name: "Get version", controller: "api/version#show", success: { data: versionSchema } }),
  (c) => respondSameForSecond(c, held, (now) => ({ object: "Version", data: versionObject(now) })),
);
