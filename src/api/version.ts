/** GET /api/2/version: the version object, no token. */
import { Hono } from "hono";
import * as z from "zod/mini";
import type { AppEnv } from "../env";
import { API_VERSION, describeRoute, respond } from "../http/container";
import { formatDatetime, nowInSeconds, TIME_ZONE } from "../http/datetime";
import { versionSchema } from "../schemas/responses/service";

export const WEB_VERSION = "2.14.0";

export function versionObject(): z.infer<typeof versionSchema> {
  return {
    apiVersion: API_VERSION,
    apiRevision: "0",
    webVersion: WEB_VERSION,
    webRevision: "0",
    currentTime: formatDatetime(nowInSeconds()),
    timeZone: TIME_ZONE,
  };
}

export const versionRoutes = new Hono<AppEnv>().get(
  "/version",
  describeRoute({ name: "Get version", controller: "api/version#show", success: { data: versionSchema } }),
  (c) => respond(c, { object: "Version", data: versionObject() }),
);
