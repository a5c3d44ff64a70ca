/**
 * GET /oauth/logout: ends the browser's session (revoked server-side, cookie removed). With
 * `client_id` and a `redirect_uri` registered for that client, exactly, it then redirects there
 * (303); otherwise, an unregistered URI included, it shows a "signed out" page and goes nowhere.
 * A GET, so that a client's "sign out" link works; the worst a forged link does is sign someone
 * out. HEAD is refused, so that prefetchers do not.
 */
import { Hono } from "hono";
import * as z from "zod/mini";
import { findClient } from "../db/queries/clients";
import type { AppEnv } from "../env";
import { describeRoute } from "../http/container";
import { nowInSeconds } from "../http/datetime";
import { LOCALE_PARAMETER, pageLocale } from "../pages/locale";
import { MESSAGES } from "../pages/messages";
import { renderPage } from "../pages/page";
import { MAX_PARAMETER_LENGTH } from "./authorization-request";
import { redirectTo } from "./authorization-response";
import { isRegisteredRedirectUri } from "./redirect-uri";
import { endPresentedSession } from "./sessions";

export const logoutRoutes = new Hono<AppEnv>().get(
  "/logout",
  describeRoute({
    name: "Sign out",
    controller: "oauth/logout#show",
    description:
      "Ends the browser's session. Redirects (303) to `redirect_uri` when it is registered for `client_id`, exactly; otherwise shows a signed-out page.",
    parameters: [
      { name: "client_id", in: "query", schema: { type: "string" } },
      { name: "redirect_uri", in: "query", schema: { type: "string" } },
      LOCALE_PARAMETER,
    ],
    success: { data: z.string(), bare: true, mediaType: "text/html" },
  }),
  async (c) => {
    if (c.req.method === "HEAD") return c.body(null, 405, { Allow: "GET" });
    await endPresentedSession(c, nowInSeconds());
    const clientId = c.req.query("client_id");
    const redirectUri = c.req.query("redirect_uri");
    if (
      clientId &&
      redirectUri &&
      clientId.length <= MAX_PARAMETER_LENGTH &&
      redirectUri.length <= MAX_PARAMETER_LENGTH
    ) {
      const client = await findClient(c.get("db")(), clientId);
      if (client && isRegisteredRedirectUri(client.redirectUris, redirectUri)) return redirectTo(c, redirectUri);
    }
    const locale = pageLocale(c.req.query("locale"), c.req.header("Accept-Language"));
    const { title, text } = MESSAGES[locale].signedOut;
    return renderPage(c, 200, { locale, title, body: <p>{text}</p> });
  },
);
