/** GET /api/2/version: the version object, no token. */
import { Hono } from "hono";
import type { AppEnv } from "../env";
import { API_VERSION, describeRoute, respond } from "../http/container";
import { formatDatetime, nowInSeconds, TIME_ZONE } from "../http/datetime";

export const WEB_VERSION = "2.14.0";

export function versionObject() {
  return {
    apiVersion: API_VERSION,
    apiRevision: "0",
    webVersion: WEB_VERSION,
    webRevision: "0",
    currentTime: formatDatetime(nowInSeconds()),
    timeZone: TIME_ZONE,
  };
}

export const versionRoutes = new Hono<AppEnv>().get("/version", describeRoute("Get version", "api/version#show"), (c) =>
  respond(c, { object: "Version", data: versionObject() }),
);
