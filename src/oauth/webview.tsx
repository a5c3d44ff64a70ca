/**
 * GET /oauth/webview?code=…: the webview entry. An app that holds a user token asks
 * POST /api/2/oauth/exchange for a `session` code (bound to a client and one of its redirect
 * URIs), then opens this URL in its webview: the code is spent (once, within its 30 seconds), a
 * browser session is started for the code's user, and the webview is sent on to the bound
 * redirect URI, signed in, its previous session (if any) ended. A bad, expired or used code gets a
 * page saying so, never a session; a replayed code also ends the session its first use started,
 * also when the two race. HEAD is refused, so that link previews do not spend the code.
 */
import { Hono } from "hono";
import * as z from "zod/mini";
import { findClient } from "../db/queries/clients";
import { findUserRefusal } from "../db/queries/users";
import type { AppEnv } from "../env";
import { describeRoute } from "../http/container";
import { nowInSeconds } from "../http/datetime";
import { spendExchangeCode } from "../kv/codes";
import { LOCALE_PARAMETER, pageLocale } from "../pages/locale";
import { MESSAGES } from "../pages/messages";
import { renderPage } from "../pages/page";
import { redirectTo } from "./authorization-response";
import { isRegisteredRedirectUri } from "./redirect-uri";
import { newSessionId, revokeStartingSession, startSession, REMEMBERED_SESSION_LIFETIME } from "./sessions";

const MAX_CODE_LENGTH = 256;

export const webviewRoutes = new Hono<AppEnv>().get(
  "/webview",
  describeRoute({
    name: "Open a webview session",
    controller: "oauth/webview#show",
    description:
      "The webview entry: `code` is a `session` exchange code (POST /api/2/oauth/exchange). Starts a browser session for its user and redirects (303) to the code's redirect URI; a bad, expired or used code gets an HTML page (400 or 410). `locale` (en_US, nb_NO, sv_SE) picks the page's language before Accept-Language.",
    parameters: [{ name: "code", in: "query", required: true, schema: { type: "string" } }, LOCALE_PARAMETER],
    success: { status: 303, data: z.null(), redirect: true },
  }),
  async (c) => {
    // Link previews and prefetchers send HEAD: answered without spending the code.
    if (c.req.method === "HEAD") return c.body(null, 405, { Allow: "GET" });
    const locale = pageLocale(c.req.query("locale"), c.req.header("Accept-Language"));
    const text = MESSAGES[locale];
    const page = (status: 400 | 410, message: { title: string; text: string }) =>
      renderPage(c, status, { locale, title: message.title, body: <p>{message.text}</p> }, { frameable: true });

    const codes = c.req.queries("code") ?? [];
    const [code] = codes;
    if (codes.length !== 1 || !code || code.length > MAX_CODE_LENGTH) return page(400, text.linkInvalid);
    const now = nowInSeconds();
    const session = await newSessionId(c.env);
    const spent = await spendExchangeCode(c.env, code, { type: "session" }, session.idHash, c.get("timing"));
    switch (spent.outcome) {
      case "invalid":
      case "redirect_mismatch":
      case "verifier_mismatch":
        return page(400, text.linkInvalid);
      case "expired":
        return page(410, text.linkExpired);
      case "replayed":
        if (spent.grant) await revokeStartingSession(c, spent.clientId, spent.grant, now);
        return page(410, text.linkUsed);
    }
    const { record } = spent;
    const db = c.get("db")();
    // The client and its redirect URI as they are now, and a user who may still sign in.
    const [target, refusal] = await Promise.all([findClient(db, record.clientId), findUserRefusal(db, record.userId)]);
    if (!target || !isRegisteredRedirectUri(target.redirectUris, record.redirectUri) || refusal !== undefined) {
      return page(400, text.linkInvalid);
    }
    const started = await startSession(
      c,
      session,
      {
        userId: record.userId,
        clientId: target.id,
        lifetime: REMEMBERED_SESSION_LIFETIME,
        persistent: true,
        replayable: true,
      },
      now,
    );
    if (!started) return page(410, text.linkUsed);
    return redirectTo(c, record.redirectUri);
  },
);
