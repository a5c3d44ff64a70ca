/**
 * GET and POST /oauth/logout: sign-out. A GET never ends a session (another site can make a
 * browser send one): with a live session it shows a page that asks, whose button posts back with
 * a CSRF token; the POST ends the session (revoked server-side, cookie removed). Either then
 * goes to `redirect_uri` (303) when it is registered for `client_id`, exactly, and otherwise
 * shows a "signed out" page; a GET without a live session goes there at once, as there is
 * nothing to end. An unregistered URI is never followed, so this is no open redirect. HEAD is
 * refused.
 */
import { type Context, Hono } from "hono";
import * as z from "zod/mini";
import { findClient } from "../db/queries/clients";
import type { AppEnv } from "../env";
import { describeRoute } from "../http/container";
import { nowInSeconds } from "../http/datetime";
import { isForm } from "../http/media-type";
import { type Locale, LOCALE_PARAMETER, pageLocale } from "../pages/locale";
import { MESSAGES } from "../pages/messages";
import { renderPage } from "../pages/page";
import { MAX_PARAMETER_LENGTH } from "./authorization-request";
import { redirectTo } from "./authorization-response";
import { csrfToken, csrfTokenValid } from "./csrf";
import { isRegisteredRedirectUri } from "./redirect-uri";
import { endPresentedSession, presentedSession } from "./sessions";

/** Where sign-out goes on to: the client's registered URI, or nowhere (the signed-out page). */
type Return = { clientId: string; redirectUri: string } | null;

export const logoutRoutes = new Hono<AppEnv>()
  .get(
    "/logout",
    describeRoute({
      name: "Sign out",
      controller: "oauth/logout#show",
      description:
        "Asks before ending the browser's session: a page (HTML) whose button posts to POST /oauth/logout. Without a live session, nothing to end: redirects (303) to `redirect_uri` when it is registered for `client_id`, exactly, or shows a signed-out page.",
      parameters: [
        { name: "client_id", in: "query", schema: { type: "string" } },
        { name: "redirect_uri", in: "query", schema: { type: "string" } },
        LOCALE_PARAMETER,
      ],
      success: { data: z.string(), bare: true, mediaType: "text/html" },
    }),
    (c) => askToSignOut(c, c.req.query("client_id")),
  )
  .post(
    "/logout",
    describeRoute({
      name: "Sign out (confirmed)",
      controller: "oauth/logout#create",
      description:
        "The sign-out page's form (`csrf`, and `client_id`, `redirect_uri`, `locale` as given to the page): ends the browser's session, then redirects (303) to `redirect_uri` when it is registered for `client_id`, exactly, or shows a signed-out page. Without a valid CSRF token: the page again (403), nothing ended.",
      success: { data: z.string(), bare: true, mediaType: "text/html" },
    }),
    async (c) => {
      const acceptLanguage = c.req.header("Accept-Language");
      const form = isForm(c.req.header("Content-Type")) ? new URLSearchParams(await c.req.text()) : null;
      const locale = pageLocale(form?.get("locale") ?? undefined, acceptLanguage);
      const back = await registeredReturn(c, form?.get("client_id"), form?.get("redirect_uri"));
      if (!form || !(await csrfTokenValid(c, form.get("csrf")))) return confirmationPage(c, locale, back, 403);
      await endPresentedSession(c, nowInSeconds());
      return signedOut(c, locale, back);
    },
  );

/**
 * GET sign-out for `clientId` (the query's `redirect_uri` followed only when registered for it):
 * a live session is asked about first; without one, there is nothing to end.
 */
export async function askToSignOut(c: Context<AppEnv>, clientId: string | undefined): Promise<Response> {
  if (c.req.method === "HEAD") return c.body(null, 405, { Allow: "GET, POST" });
  const locale = pageLocale(c.req.query("locale"), c.req.header("Accept-Language"));
  const [back, session] = await Promise.all([
    registeredReturn(c, clientId, c.req.query("redirect_uri")),
    presentedSession(c, nowInSeconds()),
  ]);
  return session ? confirmationPage(c, locale, back, 200) : signedOut(c, locale, back);
}

async function registeredReturn(
  c: Context<AppEnv>,
  clientId: string | null | undefined,
  redirectUri: string | null | undefined,
): Promise<Return> {
  if (
    !clientId ||
    !redirectUri ||
    clientId.length > MAX_PARAMETER_LENGTH ||
    redirectUri.length > MAX_PARAMETER_LENGTH
  ) {
    return null;
  }
  const client = await findClient(c.get("db")(), clientId);
  return client && isRegisteredRedirectUri(client.redirectUris, redirectUri, client.publicClient)
    ? { clientId, redirectUri }
    : null;
}

async function confirmationPage(c: Context<AppEnv>, locale: Locale, back: Return, status: 200 | 403) {
  const text = MESSAGES[locale].signOut;
  const body = (
    <>
      {status === 403 && (
        <p class="alert" role="alert">
          {MESSAGES[locale].signIn.formExpired}
        </p>
      )}
      <p>{text.text}</p>
      <form method="post" action="/oauth/logout">
        {back && <input type="hidden" name="client_id" value={back.clientId} />}
        {back && <input type="hidden" name="redirect_uri" value={back.redirectUri} />}
        <input type="hidden" name="locale" value={locale} />
        <input type="hidden" name="csrf" value={await csrfToken(c)} />
        <button type="submit">{text.confirm}</button>
      </form>
    </>
  );
  return renderPage(c, status, { locale, title: text.title, body }, { redirectsTo: back ? [back.redirectUri] : [] });
}

function signedOut(c: Context<AppEnv>, locale: Locale, back: Return) {
  if (back) return redirectTo(c, back.redirectUri);
  const { title, text } = MESSAGES[locale].signedOut;
  return renderPage(c, 200, { locale, title, body: <p>{text}</p> });
}
