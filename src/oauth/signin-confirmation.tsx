/**
 * GET and POST /oauth/signin: where a sign-in link leads. GET only shows the confirmation page
 * (naming the client that asked for the link, with the request's `context`): mail scanners and
 * link previews open links, and must not spend them. The page's button posts the token back with
 * a CSRF token; that use signs the browser in (a remembered session when the link says so) and
 * finishes the link's authorization request: the consent page first where the client needs one,
 * then the link's redirect URI with an authorization code. An unknown, expired, used or replaced
 * link gets a page saying so, never a login. A use the platform failed gets a page that says try
 * again (503): the same browser's next try, by the button or by the link, goes on with it.
 */
import { type Context, Hono } from "hono";
import * as z from "zod/mini";
import { findPrimaryEmails, setPasswordHash } from "../db/queries/users";
import type { AppEnv } from "../env";
import { describeRoute } from "../http/container";
import { nowInSeconds } from "../http/datetime";
import { isForm } from "../http/media-type";
import { type Locale, pageLocale } from "../pages/locale";
import { MESSAGES } from "../pages/messages";
import { Alert, CodeInput, type PageStatus, renderPage, WayBack } from "../pages/page";
import { hashPassword } from "../security/password";
import { auditEntry, type SignInClient } from "../events/audit";
import { signOutSite, signOutUser } from "./sign-out";
import { checkSecondFactor } from "./factors/second-factor";
import { resumeAuthorization } from "./authorize";
import { csrfToken, csrfTokenValid } from "./csrf";
import {
  BROWSER_SESSION_LIFETIME,
  newSessionId,
  presentedSession,
  REMEMBERED_SESSION_LIFETIME,
  startSession,
} from "./sessions";
import type { SignInLink } from "../kv/signin-links";
import { inspectSignInLink, linkWayBack, type LinkState, signInClaim, useSignInLink } from "./signin-links";
import { clientBranding } from "../pages/client-style";

export const signinConfirmationRoutes = new Hono<AppEnv>()
  .get(
    "/signin",
    describeRoute({
      name: "Show a sign-in link's confirmation page",
      controller: "oauth/signin#show",
      description:
        "Where the link of POST /api/2/signin leads: a page that names the client and the account (and the browser's other account it signs out) and asks to confirm (HTML, 200), or says the link is unknown (400), expired or no longer works (410). Opening it spends nothing.",
      parameters: [{ name: "token", in: "query", required: true, schema: { type: "string" } }],
      success: { data: z.string(), bare: true, mediaType: "text/html" },
    }),
    async (c) => {
      const token = c.req.query("token") ?? "";
      const now = nowInSeconds();
      const csrf = await csrfToken(c);
      const state = await inspectSignInLink(c, token, await signInClaim(c.env, token, csrf), now);
      const locale = linkLocale(c, state);
      if (state.outcome !== "live") return linkFailurePage(c, state.outcome, locale, token);
      if (state.link.resets === "password") return newPasswordPage(c, 200, { token, csrf, locale, state });
      const text = MESSAGES[locale].confirmSignIn;
      // A link someone else forwarded would sign this browser in as them: say whom it signs in,
      // and whom it signs out.
      const session = await presentedSession(c, now);
      const signedInAs =
        session && session.userId !== state.userId
          ? (await findPrimaryEmails(c.get("db")(), [session.userId])).get(session.userId)
          : undefined;
      return renderPage(
        c,
        200,
        {
          locale,
          title: text.title,
          body: (
            <>
              <p>{text.intro(state.client.name)}</p>
              <p>{text.account(state.link.email)}</p>
              {signedInAs !== undefined && <p>{text.switches(signedInAs)}</p>}
              {state.link.context && (
                <p>
                  {text.context} {state.link.context}
                </p>
              )}
              <form method="post" action="/oauth/signin">
                <input type="hidden" name="token" value={token} />
                <input type="hidden" name="csrf" value={csrf} />
                <button type="submit">{text.confirm}</button>
              </form>
            </>
          ),
        },
        {
          redirectsTo: redirectTargets(state.link),
          ...clientBranding(state.client),
          languages: (other) => linkPage(token, other),
        },
      );
    },
  )
  .post(
    "/signin",
    describeRoute({
      name: "Use a sign-in link",
      controller: "oauth/signin#create",
      description:
        "The confirmation page's form (`token`, `csrf`): signs the browser in, then the consent page (HTML) where the client needs the user's consent, else a redirect (303) to the link's redirect URI with `code` (and `state` when the link came from the login page).",
      success: { status: 303, data: z.null(), redirect: true },
    }),
    async (c) => {
      const fallbackLocale = pageLocale(undefined, c.req.header("Accept-Language"));
      if (!isForm(c.req.header("Content-Type"))) return linkFailurePage(c, "invalid", fallbackLocale);
      const form = new URLSearchParams(await c.req.text());
      const token = form.get("token") ?? "";
      const csrf = form.get("csrf");
      const now = nowInSeconds();
      // A forged post would sign the victim in as someone else: the CSRF token must hold first.
      if (csrf === null || !(await csrfTokenValid(c, csrf))) {
        const state = await inspectSignInLink(c, token, null, now);
        return linkFailurePage(c, state.outcome === "live" ? "invalid" : state.outcome, linkLocale(c, state), token);
      }
      const claim = await signInClaim(c.env, token, csrf);
      const password = form.get("password");
      // A new password, and the second factor of a user who has one, are judged before the link is
      // used: a short password or a wrong code leaves the link to try again.
      let method: "email" | "email+otp" = "email";
      if (password !== null) {
        const state = await inspectSignInLink(c, token, claim, now);
        if (state.outcome !== "live") return linkFailurePage(c, state.outcome, fallbackLocale, token);
        const locale = linkLocale(c, state);
        const page = { token, csrf, locale, state };
        const text = MESSAGES[locale];
        if (!acceptablePassword(password))
          return newPasswordPage(c, 400, { ...page, alert: text.newPassword.tooShort });
        if (state.secondFactor && state.userId !== null) {
          // The mailbox alone sets no password of an account that has a second factor.
          const checked = await checkSecondFactor(c, state.client, state.userId, form.get("code")?.trim() ?? "", now);
          if (checked.outcome === "throttled")
            return newPasswordPage(c, 429, { ...page, alert: text.signIn.throttled });
          if (checked.outcome === "failed") return newPasswordPage(c, 401, { ...page, alert: text.secondFactor.wrong });
          method = "email+otp";
        }
      }
      const used = await useSignInLink(c, token, claim, now);
      if (used.outcome !== "used") return linkFailurePage(c, used.outcome, fallbackLocale, token);
      const { link, userId, merchantId } = used;
      if (link.resets === "password") {
        if (password === null) return linkFailurePage(c, "invalid", fallbackLocale);
        await setNewPassword(c, { id: link.clientId, merchantId }, userId, password, now);
      }
      const session = await newSessionId(c.env);
      await startSession(
        c,
        session,
        {
          userId,
          client: { id: link.clientId, merchantId },
          lifetime: link.remember ? REMEMBERED_SESSION_LIFETIME : BROWSER_SESSION_LIFETIME,
          persistent: link.remember,
          method,
        },
        now,
      );
      const signedIn = {
        userId,
        clientId: link.clientId,
        merchantId,
        sessionHash: session.idHash,
        created: now,
        method,
        secondFactor: used.secondFactor,
      };
      const answer = await resumeAuthorization(c, link.authorization, pageLocale(link.locale, undefined), signedIn);
      // Answered: the claim goes, and not even this browser can use the link again.
      c.executionCtx.waitUntil(used.done());
      return answer;
    },
  );

/** NIST SP 800-63B: at least 8 characters, no rules of composition; at most 256, a bound on the hash's work. */
function acceptablePassword(password: string): boolean {
  const length = [...password].length;
  return length >= 8 && length <= 256;
}

/**
 * A reset link's use: the new password, and every session and refresh token of the user ended
 * (their clients told by back-channel logout), in one batch with the audit entry. Repeated on a
 * retry of the same use, it sets the same password again.
 */
async function setNewPassword(c: Context<AppEnv>, client: SignInClient, userId: number, password: string, now: number) {
  const db = c.get("db")();
  const signOut = await signOutUser(signOutSite(c), userId, null, now);
  await db.batch([
    setPasswordHash(db, userId, await hashPassword(password)),
    ...signOut.writes,
    auditEntry(
      c,
      { actor: "user", clientId: client.id, merchantId: client.merchantId },
      { action: "user.password.reset", userId, detail: { sessions: signOut.sessions, grants: signOut.grants } },
      now,
    ),
  ]);
}

function newPasswordPage(
  c: Context<AppEnv>,
  status: PageStatus,
  page: { token: string; csrf: string; locale: Locale; state: Extract<LinkState, { outcome: "live" }>; alert?: string },
) {
  const text = MESSAGES[page.locale].newPassword;
  const body = (
    <>
      <p>{text.intro(page.state.client.name)}</p>
      <p>{MESSAGES[page.locale].confirmSignIn.account(page.state.link.email)}</p>
      <Alert text={page.alert} />
      <form method="post" action="/oauth/signin">
        <input type="hidden" name="token" value={page.token} />
        <input type="hidden" name="csrf" value={page.csrf} />
        {page.state.secondFactor && <CodeInput label={MESSAGES[page.locale].secondFactor.code} />}
        <label for="password">{text.password}</label>
        <input
          id="password"
          name="password"
          type="password"
          autocomplete="new-password"
          minlength={8}
          maxlength={256}
          aria-describedby="password-hint"
          required
        />
        <p id="password-hint" class="hint">
          {text.hint}
        </p>
        <button type="submit">{text.submit}</button>
      </form>
    </>
  );
  return renderPage(
    c,
    status,
    { locale: page.locale, title: text.title, body },
    { redirectsTo: redirectTargets(page.state.link) },
  );
}

/** Where using the link may redirect: its redirect URI, or its authorization request's failure URI. */
function redirectTargets(link: SignInLink): string[] {
  const failure = link.authorization.failure_redirect_uri;
  return failure === undefined ? [link.redirectUri] : [link.redirectUri, failure];
}

/** The link's own locale (that of the request that sent it), else the browser's. */
function linkLocale(c: Context<AppEnv>, state: LinkState): Locale {
  // The page's language switch asks for a locale; else the link's own (its request's).
  const requested = c.req.query("locale") ?? (state.outcome === "live" ? state.link.locale : undefined);
  return pageLocale(requested, c.req.header("Accept-Language"));
}

/** The link's page in `locale`. */
function linkPage(token: string, locale: Locale): string {
  return `/oauth/signin?${new URLSearchParams({ token, locale })}`;
}

const FAILURES = {
  invalid: "The sign-in link is not valid",
  expired: "The sign-in link has expired",
  spent: "The sign-in link no longer works",
};

/**
 * A link that cannot sign in: what became of it, and the way back to its client where it is known,
 * in the client's colours.
 */
async function linkFailurePage(
  c: Context<AppEnv>,
  outcome: "invalid" | "expired" | "spent",
  locale: Locale,
  token?: string,
) {
  const text = MESSAGES[locale];
  const { title, text: body } =
    outcome === "invalid" ? text.linkInvalid : outcome === "expired" ? text.signInLinkExpired : text.signInLinkSpent;
  const back = token === undefined ? undefined : await linkWayBack(c, token, FAILURES[outcome]);
  const page = (
    <>
      <p>{body}</p>
      <WayBack locale={locale} back={back} />
    </>
  );
  return renderPage(
    c,
    outcome === "invalid" ? 400 : 410,
    { locale, title, body: page },
    {
      ...(back && clientBranding(back.client)),
      languages: token === undefined ? undefined : (other) => linkPage(token, other),
    },
  );
}
