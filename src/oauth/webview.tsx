/**
 * GET /oauth/webview?code=…: the webview entry. An app that holds a user token asks
 * POST /api/2/oauth/exchange for a `session` code (bound to a client and one of its redirect
 * URIs), then opens this URL in its webview: the code is spent (once, within its 30 seconds), a
 * browser session is started for the code's user, and the webview is sent on to the bound
 * redirect URI, signed in, its previous session (if any) ended. The code is spent once that
 * session is written, so a fault before leaves it to the webview's retry, and the session's cookie
 * is set only once the code is spent, so that no 503 carries it. A bad, expired or used
 * code gets a page saying so, never a session, and for a known code a way back to its client; a replayed code also ends the session its first use
 * started; one opened while another open of it is under way is told to try again (503). HEAD is
 * refused, so that link previews do not spend the code.
 *
 * A browser already signed in as another user is not switched silently (someone else's code,
 * opened in a victim's browser, would sign the victim in as that someone: login CSRF): it gets a
 * page naming both accounts, whose button (POST, with a CSRF token) spends the code. That page
 * may not be framed, so no other site can trick the click.
 */
import { type Context, Hono } from "hono";
import * as z from "zod/mini";
import { findClient } from "../db/queries/clients";
import { revokeSession } from "../db/queries/sessions";
import { findPrimaryEmails, findUserRefusal } from "../db/queries/users";
import type { AppEnv } from "../env";
import { describeRoute } from "../http/container";
import { nowInSeconds } from "../http/datetime";
import { isForm } from "../http/media-type";
import { type ExchangeCodeRecord, peekExchangeCode, spendExchangeCode } from "../kv/codes";
import { clientBranding } from "../pages/client-style";
import { type Locale, LOCALE_PARAMETER, pageLocale } from "../pages/locale";
import { MESSAGES } from "../pages/messages";
import { renderPage, sameAddressIn, WayBack } from "../pages/page";
import { clientWayBack, redirectTo } from "./authorization-response";
import { csrfToken, csrfTokenValid } from "./csrf";
import { isRegisteredRedirectUri } from "./redirect-uri";
import {
  newSessionId,
  presentedSession,
  REMEMBERED_SESSION_LIFETIME,
  type SessionId,
  setSessionCookie,
  writeSession,
} from "./sessions";

const MAX_CODE_LENGTH = 256;
/** A webview's session is remembered: apps keep their webview's cookies. */
const WEBVIEW_SESSION = { lifetime: REMEMBERED_SESSION_LIFETIME, persistent: true };

export const webviewRoutes = new Hono<AppEnv>()
  .get(
    "/webview",
    describeRoute({
      name: "Open a webview session",
      controller: "oauth/webview#show",
      description:
        "The webview entry: `code` is a `session` exchange code (POST /api/2/oauth/exchange). Starts a browser session for its user and redirects (303) to the code's redirect URI; a bad, expired or used code gets an HTML page (400 or 410). A browser signed in as another user gets a page (200) that names both accounts and asks before switching. `locale` (en_US, nb_NO, sv_SE) picks the page's language before Accept-Language.",
      parameters: [{ name: "code", in: "query", required: true, schema: { type: "string" } }, LOCALE_PARAMETER],
      success: { status: 303, data: z.null(), redirect: true },
    }),
    async (c) => {
      // Link previews and prefetchers send HEAD: answered without spending the code.
      if (c.req.method === "HEAD") return c.body(null, 405, { Allow: "GET" });
      const locale = pageLocale(c.req.query("locale"), c.req.header("Accept-Language"));
      const codes = c.req.queries("code") ?? [];
      const [code] = codes;
      if (codes.length !== 1 || !code || code.length > MAX_CODE_LENGTH) return failurePage(c, locale, "invalid");
      const switchPage = await accountSwitchPage(c, code, locale);
      return switchPage ?? openSession(c, code, locale);
    },
  )
  .post(
    "/webview",
    describeRoute({
      name: "Switch the webview's account",
      controller: "oauth/webview#create",
      description:
        "The account-switch page's form (`code`, `csrf`, `locale`): spends the code as the webview entry does, ending the browser's session for the code's user's, and redirects (303) to the code's redirect URI.",
      success: { status: 303, data: z.null(), redirect: true },
    }),
    async (c) => {
      const fallback = pageLocale(undefined, c.req.header("Accept-Language"));
      if (!isForm(c.req.header("Content-Type"))) return failurePage(c, fallback, "invalid");
      const form = new URLSearchParams(await c.req.text());
      const locale = pageLocale(form.get("locale") ?? undefined, c.req.header("Accept-Language"));
      const code = form.get("code") ?? "";
      if (!code || code.length > MAX_CODE_LENGTH || !(await csrfTokenValid(c, form.get("csrf")))) {
        return failurePage(c, locale, "invalid");
      }
      return openSession(c, code, locale);
    },
  );

/**
 * The page that asks before a code signs the browser in as another user than its session's;
 * null when there is nothing to ask (no session, the same user, or a code that will fail anyway).
 */
async function accountSwitchPage(c: Context<AppEnv>, code: string, locale: Locale): Promise<Response | null> {
  // A browser without a session (the usual webview) costs nothing here: no cookie, no read.
  const session = await presentedSession(c, nowInSeconds());
  if (!session) return null;
  const record = await peekExchangeCode(c.env, code, "session", c.get("timing"));
  if (!record || record.userId === session.userId) return null;
  const db = c.get("db")();
  const [emails, client] = await Promise.all([
    findPrimaryEmails(db, [session.userId, record.userId]),
    findClient(db, record.clientId),
  ]);
  const text = MESSAGES[locale].accountSwitch;
  const body = (
    <>
      <p>{text.current(emails.get(session.userId) ?? "")}</p>
      <p>{text.next(emails.get(record.userId) ?? "")}</p>
      <form method="post" action="/oauth/webview">
        <input type="hidden" name="code" value={code} />
        <input type="hidden" name="locale" value={locale} />
        <input type="hidden" name="csrf" value={await csrfToken(c)} />
        <button type="submit">{text.confirm}</button>
      </form>
      <p>{text.cancel}</p>
    </>
  );
  return renderPage(
    c,
    200,
    { locale, title: text.title, body },
    { ...(client && clientBranding(client)), redirectsTo: [record.redirectUri], languages: sameAddressIn(c) },
  );
}

/** Spends the code and starts its user's session, ending the browser's previous one. */
async function openSession(c: Context<AppEnv>, code: string, locale: Locale): Promise<Response> {
  const now = nowInSeconds();
  const session = await newSessionId(c.env);
  const spent = await spendExchangeCode(c, code, { type: "session" }, session.idHash, (record) =>
    writeWebviewSession(c, session, record, now),
  );
  switch (spent.outcome) {
    case "invalid":
    case "redirect_mismatch":
    case "verifier_mismatch":
      return failurePage(c, locale, "invalid");
    case "expired":
      return failurePage(c, locale, "expired", spent.record);
    case "replayed":
      if (spent.grant) await revokeSession(c.get("db")(), spent.grant, now);
      return failurePage(c, locale, "used", spent.record);
  }
  if (!spent.started) return failurePage(c, locale, "refused", spent.record);
  await setSessionCookie(c, session, WEBVIEW_SESSION);
  return redirectTo(c, spent.record.redirectUri);
}

/**
 * Writes the session the code stands for, its cookie set once the code is spent; false when its
 * client, the client's redirect URI or its user may no longer have one (the code is spent all the
 * same: it has had its answer).
 */
async function writeWebviewSession(
  c: Context<AppEnv>,
  session: SessionId,
  record: ExchangeCodeRecord,
  now: number,
): Promise<boolean> {
  const db = c.get("db")();
  // The client and its redirect URI as they are now, and a user who may still sign in.
  const [target, refusal] = await Promise.all([findClient(db, record.clientId), findUserRefusal(db, record.userId)]);
  if (
    !target ||
    !isRegisteredRedirectUri(target.redirectUris, record.redirectUri, target.publicClient) ||
    refusal !== undefined
  ) {
    return false;
  }
  await writeSession(c, session, { userId: record.userId, client: target, method: null, ...WEBVIEW_SESSION }, now);
  return true;
}

/** Why a code opened no session: the `error_description` of the way back to its client. */
const FAILURES = {
  invalid: "The code is invalid",
  expired: "The code has expired",
  used: "The code has already been used",
  refused: "The user or the client may no longer sign in",
};

/**
 * A code that opened no session: what became of it and, for a code that is known, the way back to
 * its client (its redirect URI, with `access_denied`), in the client's colours.
 */
async function failurePage(
  c: Context<AppEnv>,
  locale: Locale,
  reason: keyof typeof FAILURES,
  record?: ExchangeCodeRecord,
): Promise<Response> {
  const text = MESSAGES[locale];
  const message = reason === "expired" ? text.linkExpired : reason === "used" ? text.linkUsed : text.linkInvalid;
  const failure = { error: "access_denied", description: FAILURES[reason] };
  const back = record && (await clientWayBack(c, record.clientId, record.redirectUri, failure));
  const body = (
    <>
      <p>{message.text}</p>
      <WayBack locale={locale} back={back} />
    </>
  );
  return renderPage(
    c,
    reason === "expired" || reason === "used" ? 410 : 400,
    { locale, title: message.title, body },
    {
      frameable: true,
      ...(back && clientBranding(back.client)),
      // Opened again, a refused code (spent all the same) would say "used": no switch to that.
      languages: reason === "refused" ? undefined : sameAddressIn(c),
    },
  );
}
