/**
 * GET and POST /oauth/logout: sign-out, and the end_session_endpoint of OpenID Connect
 * RP-Initiated Logout 1.0. A GET ends a session without asking only when the client proves it
 * asked: an `id_token_hint` it was issued in this very browser session (its `sid`), and no return
 * address other than a registered one. Any other GET with a live session gets a page that asks,
 * whose button posts back with a CSRF token; another site can make a browser send a GET, never
 * that post. Either then goes (303) to the return address when it is registered for the client
 * (named by the hint, or by `client_id`) exactly: `post_logout_redirect_uri` among its
 * post-logout redirect URIs, or SPiD's `redirect_uri` among its redirect URIs, with `state` when
 * given; otherwise it shows a "signed out" page. A GET without a live session goes there at once,
 * as there is nothing to end. Ending a session first queues the back-channel logout notices of
 * the clients that received ID tokens in it (queues/logout-notices.ts). HEAD is refused.
 */
import { type Context, Hono } from "hono";
import * as z from "zod/mini";
import { findClient } from "../db/queries/clients";
import type { AppEnv } from "../env";
import { describeRoute } from "../http/container";
import { nowInSeconds } from "../http/datetime";
import { isForm } from "../http/media-type";
import { type Locale, LOCALE_PARAMETER, pageLocale, uiLocale } from "../pages/locale";
import { MESSAGES } from "../pages/messages";
import { Alert, renderPage } from "../pages/page";
import { queueLogoutNotices } from "../queues/logout-notices";
import { MAX_PARAMETER_LENGTH, withResponseParameters } from "./authorization-request";
import { redirectTo } from "./authorization-response";
import { csrfToken, csrfTokenValid } from "./csrf";
import { verifiedIdTokenHint } from "./openid/id-token-hint";
import { isRegisteredRedirectUri } from "./redirect-uri";
import { endPresentedSession, presentedSession, presentedSessionSid, sessionSid } from "./sessions";

/** The sign-out request's parameters, as the query or the page's form carries them. */
type Request = {
  clientId?: string | undefined;
  postLogoutRedirectUri?: string | undefined;
  /** SPiD's name for the return address, among the client's redirect URIs. */
  redirectUri?: string | undefined;
  state?: string | undefined;
};

/** Where sign-out goes on to: a registered return address, or nowhere (the signed-out page). */
type Return = { request: Request; location: string } | null;

const PARAMETERS = ["client_id", "post_logout_redirect_uri", "redirect_uri", "state"] as const;

/** A parameter's value, as if omitted when empty (as OpenID Connect reads them) or longer than any we take. */
function given(value: string | null | undefined): string | undefined {
  return value === null || value === undefined || value === "" || value.length > MAX_PARAMETER_LENGTH
    ? undefined
    : value;
}

export const logoutRoutes = new Hono<AppEnv>()
  .get(
    "/logout",
    describeRoute({
      name: "Sign out",
      controller: "oauth/logout#show",
      description:
        "RP-Initiated Logout (the end_session_endpoint). Ends the browser's session at once, and redirects (303), when `id_token_hint` is an ID token issued to the client in this session and the return address, if any, is registered; otherwise asks first: a page (HTML) whose button posts to POST /oauth/logout. Without a live session, nothing to end. The return: `post_logout_redirect_uri` when among the client's post-logout redirect URIs, exactly, or `redirect_uri` among its redirect URIs (SPiD), with `state`; otherwise a signed-out page.",
      parameters: [
        { name: "id_token_hint", in: "query", schema: { type: "string" } },
        { name: "client_id", in: "query", schema: { type: "string" } },
        { name: "post_logout_redirect_uri", in: "query", schema: { type: "string" } },
        { name: "redirect_uri", in: "query", schema: { type: "string" } },
        { name: "state", in: "query", schema: { type: "string" } },
        { name: "ui_locales", in: "query", schema: { type: "string" } },
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
        "The sign-out page's form (`csrf`, and `client_id`, `post_logout_redirect_uri` or `redirect_uri`, `state`, `locale` as given to the page): ends the browser's session, then redirects (303) to the return address when it is registered for the client, exactly, or shows a signed-out page. Without a valid CSRF token: the page again (403), nothing ended.",
      success: { data: z.string(), bare: true, mediaType: "text/html" },
    }),
    async (c) => {
      const acceptLanguage = c.req.header("Accept-Language");
      const form = isForm(c.req.header("Content-Type")) ? new URLSearchParams(await c.req.text()) : null;
      const locale = pageLocale(form?.get("locale") ?? undefined, acceptLanguage);
      const value = (name: (typeof PARAMETERS)[number]) => given(form?.get(name));
      const back = await registeredReturn(c, {
        clientId: value("client_id"),
        postLogoutRedirectUri: value("post_logout_redirect_uri"),
        redirectUri: value("redirect_uri"),
        state: value("state"),
      });
      if (!form || !(await csrfTokenValid(c, form.get("csrf")))) return confirmationPage(c, locale, back, 403);
      await endSession(c, nowInSeconds());
      return signedOut(c, locale, back);
    },
  );

/**
 * GET sign-out for `clientId` (SPiD's paths name the client their own ways): a session the hint
 * proves the client's is ended at once; any other live session is asked about first; without
 * one, there is nothing to end.
 */
export async function askToSignOut(c: Context<AppEnv>, clientId: string | undefined): Promise<Response> {
  if (c.req.method === "HEAD") return c.body(null, 405, { Allow: "GET, POST" });
  const query = (name: string) => given(c.req.query(name));
  const locale = pageLocale(c.req.query("locale") ?? uiLocale(query("ui_locales")), c.req.header("Accept-Language"));
  const now = nowInSeconds();
  const hinted = query("id_token_hint");
  const [hint, session] = await Promise.all([
    hinted === undefined ? null : verifiedIdTokenHint(c.env, hinted, clientId),
    presentedSession(c, now),
  ]);
  const request: Request = {
    // The hint names its client; a client_id beside it must be the same (checked by the hint's audience).
    clientId: hint?.clientId ?? clientId,
    postLogoutRedirectUri: query("post_logout_redirect_uri"),
    redirectUri: query("redirect_uri"),
    state: query("state"),
  };
  const back = await registeredReturn(c, request);
  if (!session) return signedOut(c, locale, back);
  const returnAsked = request.postLogoutRedirectUri !== undefined || request.redirectUri !== undefined;
  const proven = hint?.sid !== null && hint?.sid === (await sessionSid(c.env, session.sessionHash));
  if (!proven || (returnAsked && !back)) return confirmationPage(c, locale, back, 200);
  await endSession(c, now);
  return signedOut(c, locale, back);
}

/**
 * Ends the browser's session (and removes its cookie): first queues the notices of the clients
 * that received ID tokens in it, so that a fault there leaves the session for the user's retry.
 */
async function endSession(c: Context<AppEnv>, now: number): Promise<void> {
  const sid = await presentedSessionSid(c);
  if (sid !== null) await queueLogoutNotices(c.env, c.get("db")(), sid);
  await endPresentedSession(c, now);
}

async function registeredReturn(c: Context<AppEnv>, request: Request): Promise<Return> {
  const { clientId, postLogoutRedirectUri, redirectUri } = request;
  const uri = postLogoutRedirectUri ?? redirectUri;
  if (!clientId || !uri || clientId.length > MAX_PARAMETER_LENGTH || uri.length > MAX_PARAMETER_LENGTH) return null;
  const client = await findClient(c.get("db")(), clientId);
  if (!client) return null;
  const registered = postLogoutRedirectUri !== undefined ? client.postLogoutRedirectUris : client.redirectUris;
  if (!isRegisteredRedirectUri(registered, uri, client.publicClient)) return null;
  const location = request.state === undefined ? uri : withResponseParameters(uri, { state: request.state });
  return { request, location };
}

/** The return a sign-out page carries on, as its form's fields (and its language links' query). */
function returnFields(back: Return): [string, string][] {
  if (!back) return [];
  const { clientId, postLogoutRedirectUri, redirectUri, state } = back.request;
  const fields: [string, string | undefined][] = [
    ["client_id", clientId],
    ["post_logout_redirect_uri", postLogoutRedirectUri],
    ["redirect_uri", postLogoutRedirectUri === undefined ? redirectUri : undefined],
    ["state", state],
  ];
  return fields.filter((field): field is [string, string] => field[1] !== undefined);
}

/**
 * The sign-out pages in another locale: a GET of /oauth/logout with the return they carry on, and
 * never an `id_token_hint`, so that following the link asks again rather than signing out.
 */
function signOutIn(back: Return) {
  return (locale: Locale) => `/oauth/logout?${new URLSearchParams([...returnFields(back), ["locale", locale]])}`;
}

async function confirmationPage(c: Context<AppEnv>, locale: Locale, back: Return, status: 200 | 403) {
  const text = MESSAGES[locale].signOut;
  const body = (
    <>
      {status === 403 && <Alert text={MESSAGES[locale].signIn.formExpired} />}
      <p>{text.text}</p>
      <form method="post" action="/oauth/logout">
        {returnFields(back).map(([name, value]) => (
          <input type="hidden" name={name} value={value} />
        ))}
        <input type="hidden" name="locale" value={locale} />
        <input type="hidden" name="csrf" value={await csrfToken(c)} />
        <button type="submit">{text.confirm}</button>
      </form>
    </>
  );
  return renderPage(
    c,
    status,
    { locale, title: text.title, body },
    { redirectsTo: back ? [back.location] : [], languages: signOutIn(back) },
  );
}

function signedOut(c: Context<AppEnv>, locale: Locale, back: Return) {
  if (back) return redirectTo(c, back.location);
  const { title, text } = MESSAGES[locale].signedOut;
  return renderPage(c, 200, { locale, title, body: <p>{text}</p> }, { languages: signOutIn(null) });
}
