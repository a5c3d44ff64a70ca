/**
 * GET and POST /oauth/authorize: the authorization endpoint (RFC 6749 §4.1, PKCE RFC 7636).
 *
 * GET judges the request (authorization-request.ts) and then: a browser with a live session at a
 * client with `enableSso` passes straight through (to the consent page when the user has not yet
 * granted the client access, and always when the session was started at another merchant's client
 * the user is not connected to: `autoApprove` does not carry single sign-on across merchants);
 * any other gets the login page. The pages post back here, carrying
 * the request, judged again, and a CSRF token (csrf.ts):
 *
 * - `action=login`: e-mail and password, with the password grant's verification and throttle
 *   (password-sign-in.ts); success starts the browser session.
 * - `action=link`: queues a sign-in link that finishes this request (queues/link-requests.ts);
 *   `action=reset`, from the forgotten-password view, one that sets a new password first.
 * - `action=passkey`: a passkey's assertion (factors/passkeys.ts), which signs in on its own.
 * - `action=otp`, `action=enrol`, `action=resume`: the second factor's pages (factors/second-factor.ts),
 *   taken only with the page's factor ticket (flow-ticket.ts): its code, its set-up, and the way on
 *   after the recovery codes. Every sign-in passes secondFactorPage before a code is issued.
 * - `action=approve` / `action=deny`: the consent page's answer, for the session's user, taken
 *   only with the page's consent ticket (consent.ts): a login page has none. Approval is
 *   remembered as the user's connection to the client.
 *
 * Success ends in a 303 to the redirect URI with a code; failures go where the spec's three rules
 * say, or, with nowhere safe to go, to an error page.
 */
import { type Context, Hono } from "hono";
import type { Child } from "hono/jsx";
import * as z from "zod/mini";
import { connectUser, findPrimaryEmails, findUserIdByUuid, isConnected, recordSignIn } from "../db/queries/users";
import { rateLimiterFor } from "../durable-objects/rate-limiter";
import type { AppEnv } from "../env";
import { clientNetwork } from "../http/ip";
import { describeRoute } from "../http/container";
import { nowInSeconds } from "../http/datetime";
import { isForm } from "../http/media-type";
import {
  AccountForm,
  ConsentForm,
  EnrolForm,
  type FormContext,
  RecoveryCodesForm,
  RequestFields,
  SecondFactorForm,
  SignInForm,
} from "../pages/authorize";
import { clientBranding } from "../pages/client-style";
import { type Locale, LOCALE_PARAMETER, pageLocale, uiLocale } from "../pages/locale";
import { MESSAGES } from "../pages/messages";
import { queueLinkRequest } from "../queues/link-requests";
import { type PageStatus, renderPage, WayBack } from "../pages/page";
import { canonicalEmailAddress } from "../schemas/email-address";
import { requestedFields } from "../schemas/client-fields";
import { readSignUpProfile, signUpFields } from "../schemas/sign-up";
import { type AuthorizationRequest, judgeAuthorizationRequest } from "./authorization-request";
import { redirectWithCode, redirectWithError } from "./authorization-response";
import { flowTicket, flowTicketValid } from "./flow-ticket";
import { asksForSecondFactor, hadSecondFactor, signedInRecently, withSecondFactor } from "./authentication-context";
import { checkSecondFactor, enrolment, enrolSecondFactor, secondFactorGiven } from "./factors/second-factor";
import { signInPrompt, signInWithPasskey } from "./factors/passkeys";
import { csrfToken, csrfTokenValid } from "./csrf";
import { verifiedIdTokenHint } from "./openid/id-token-hint";
import { consentEntry } from "../events/audit";
import { signInWithPassword } from "./password-sign-in";
import {
  BROWSER_SESSION_LIFETIME,
  newSessionId,
  presentedSession,
  REMEMBERED_SESSION_LIFETIME,
  sessionSid,
  type SignedIn,
  startSession,
} from "./sessions";

/** Sign-in links the login page mails for one network address, per client, in 15 minutes. */
const LINKS_PER_IP = 20;

type Flow = { c: Context<AppEnv>; request: AuthorizationRequest; failureUri: string; locale: Locale };

export const authorizeRoutes = new Hono<AppEnv>()
  .get(
    "/authorize",
    describeRoute({
      name: "Start a login (authorization endpoint)",
      controller: "oauth/authorize#show",
      description:
        "RFC 6749 §4.1 with PKCE (S256 only; required for public clients). Answers a login or consent page (HTML), or a 303 to the redirect URI with `code` and `state` (and `iss`), or with `error` by the three failure rules; with no registered URI to send a failure to, an HTML error page (400).",
      parameters: [
        { name: "client_id", in: "query", required: true, schema: { type: "string" } },
        { name: "response_type", in: "query", required: true, schema: { type: "string", enum: ["code"] } },
        {
          name: "redirect_uri",
          in: "query",
          description: "Registered for the client, exactly; the client's default when absent",
          schema: { type: "string" },
        },
        { name: "state", in: "query", schema: { type: "string" } },
        { name: "code_challenge", in: "query", schema: { type: "string" } },
        { name: "code_challenge_method", in: "query", schema: { type: "string", enum: ["S256"] } },
        {
          name: "failure_redirect_uri",
          in: "query",
          description: "Where failures go instead of redirect_uri; registered for the client, exactly",
          schema: { type: "string" },
        },
        LOCALE_PARAMETER,
      ],
      success: { data: z.string(), bare: true, mediaType: "text/html" },
    }),
    (c) => startAuthorization(c, (name) => c.req.queries(name) ?? []),
  )
  .post(
    "/authorize",
    describeRoute({
      name: "Answer the login or consent page",
      controller: "oauth/authorize#create",
      description:
        "The login, account, second-factor and consent pages' form: the authorization request's parameters, `csrf`, and `action` (`login` with `email`, `password` and `remember`; `link` with `email` (and the sign-up view's profile fields); `reset` with `email`; `passkey` with `challenge` and `credential`; `otp` with `code`, `enrol` with `enrolment` and `code`, `resume`, each with the page's `factor` ticket; `continue` or `switch` on the account page of `prompt=select_account`, `switch` on the consent page; `approve` or `deny` with the consent page's `consent` ticket). Without `csrf` and `action`, an authorization request sent by POST (OpenID Connect Core §3.1.2.1), answered as GET answers it.",
      success: { data: z.string(), bare: true, mediaType: "text/html" },
    }),
    async (c) => {
      const acceptLanguage = c.req.header("Accept-Language");
      if (!isForm(c.req.header("Content-Type"))) return requestInvalidPage(c, pageLocale(undefined, acceptLanguage));
      const form = new URLSearchParams(await c.req.text());
      const locale = pageLocale(form.get("locale") ?? uiLocale(form.get("ui_locales") ?? undefined), acceptLanguage);
      const judged = await judgeAuthorizationRequest(c.env, c.get("db")(), (name) => form.getAll(name));
      if (judged.outcome !== "valid") return failed(c, judged, locale);
      const flow: Flow = { c, request: judged.request, failureUri: judged.failureUri, locale };
      const now = nowInSeconds();
      // No page's form: an authorization request sent by POST (OpenID Connect Core §3.1.2.1).
      if (!form.has("csrf") && !form.has("action")) return passThrough(flow, now);
      const text = MESSAGES[locale].signIn;
      if (!(await csrfTokenValid(c, form.get("csrf")))) return signInPage(flow, 403, { alert: text.formExpired });

      const action = form.get("action");
      const { client } = flow.request;
      if (action === "continue") return passThrough(flow, now, { chosen: true });
      if (action === "switch") return signInPage(flow, 200);
      if (action === "otp" || action === "enrol" || action === "resume") {
        const session = await presentedSession(c, now);
        if (!session || !(await flowTicketValid(c, "factor", session.sessionHash, client.id, form.get("factor")))) {
          return signInPage(flow, 403, { alert: text.formExpired });
        }
        if (action === "resume") return afterSignIn(flow, session);
        // Setting one up changes how the account signs in: not on an old session (secondFactorPage).
        if (action === "enrol" && !signedInRecently(session, now)) return signInPage(flow, 200);
        return action === "otp" ? secondFactorPosted(flow, session, form, now) : enrolled(flow, session, form, now);
      }
      if (action === "approve" || action === "deny") {
        const session = await presentedSession(c, now);
        if (!session || !(await flowTicketValid(c, "consent", session.sessionHash, client.id, form.get("consent")))) {
          return signInPage(flow, 403, { alert: text.formExpired });
        }
        if (action === "deny") {
          return redirectWithError(
            c,
            flow.failureUri,
            { error: "access_denied", description: "The user denied access" },
            flow.request.state,
          );
        }
        // A consent page shown before the request asked for a second factor approves no sign-in without one.
        const factorPage = await secondFactorPage(flow, session);
        if (factorPage) return factorPage;
        const db = c.get("db")();
        await db.batch([
          connectUser(db, { clientId: client.id, userId: session.userId, merchantId: client.merchantId }),
          consentEntry(c, client, session.userId, now),
        ]);
        return codeFor(flow, session);
      }

      if (action === "passkey") return passkeySignIn(flow, form, now);
      const email = form.get("email")?.trim() ?? "";
      if (action === "link" || action === "reset") {
        const address = canonicalEmailAddress(email);
        if (address === null) return signInPage(flow, 400, { alert: text.emailMissing, email });
        // The sign-up view's profile, for the account its link makes.
        const signingUp = action === "link" && flow.request.view === "signup";
        const read = signingUp ? readSignUpProfile(form, signUpFields(client.fields)) : { profile: undefined };
        if ("problem" in read) {
          const sent = Object.fromEntries(form);
          return signInPage(flow, 400, { alert: text.profile[read.problem], email, profile: sent });
        }
        // Anyone may fill in this form: mail per user is held to one a minute, and per network to
        // LINKS_PER_IP per 15 minutes for each client, so the page cannot be a mail cannon.
        const allowed = await rateLimiterFor(c.env, client.id, c.get("timing")).beginSignIn(
          `link-ip:${clientNetwork(c.req.raw)}`,
          LINKS_PER_IP,
        );
        if (!allowed.allowed) {
          return signInPage(flow, 429, { alert: text.throttled, email }, { "Retry-After": String(allowed.retryAfter) });
        }
        // Whatever comes of it (sent, blocked, unknown, unverified), the same page after the same
        // work: the request is queued, and whether a link is mailed is decided off this request.
        await queueLinkRequest(c.env, {
          clientId: client.id,
          email: address,
          redirectUri: flow.request.redirectUri,
          remember: form.get("remember") === "1",
          locale,
          authorization: flow.request.parameters,
          ...(action === "reset" && { resetsPassword: true }),
          ...(read.profile && { profile: read.profile }),
        });
        const sent = MESSAGES[locale].linkSent;
        return page(flow, 200, sent.title, <p>{sent.text}</p>);
      }
      if (action !== "login") return signInPage(flow, 400, { email });
      if (!email) return signInPage(flow, 400, { alert: text.emailMissing });
      const signIn = await signInWithPassword(c, client, email, form.get("password") ?? "", now);
      switch (signIn.outcome) {
        case "throttled":
          return signInPage(flow, 429, { alert: text.throttled, email }, { "Retry-After": String(signIn.retryAfter) });
        case "wrong":
          return signInPage(flow, 401, { alert: text.wrong, email });
        case "refused":
          return signInPage(flow, 403, { alert: text.refused, email });
      }
      const remember = form.get("remember") === "1";
      const db = c.get("db")();
      const session = await newSessionId(c.env);
      await startSession(
        c,
        session,
        {
          userId: signIn.user.id,
          client,
          lifetime: remember ? REMEMBERED_SESSION_LIFETIME : BROWSER_SESSION_LIFETIME,
          persistent: remember,
          method: "pwd",
          writes: [recordSignIn(db, signIn.user.id, now)],
        },
        now,
      );
      return afterSignIn(flow, {
        userId: signIn.user.id,
        clientId: client.id,
        sessionHash: session.idHash,
        merchantId: client.merchantId,
        created: now,
        method: "pwd",
        secondFactor: signIn.user.secondFactor,
      });
    },
  );

/**
 * A GET that starts an authorization request with the parameters `valuesOf` reads (the query at
 * /oauth/authorize; SPiD's names, mapped, at /flow/*): a live session passes straight through
 * where passThrough allows; any other gets the sign-in page in the request's view.
 */
export async function startAuthorization(c: Context<AppEnv>, valuesOf: (name: string) => string[]): Promise<Response> {
  // Prefetchers send HEAD: a passing-through session must not mint codes for them.
  if (c.req.method === "HEAD") return c.body(null, 405, { Allow: "GET, POST" });
  const acceptLanguage = c.req.header("Accept-Language");
  const locale = pageLocale(c.req.query("locale") ?? uiLocale(valuesOf("ui_locales")[0]), acceptLanguage);
  const judged = await judgeAuthorizationRequest(c.env, c.get("db")(), valuesOf);
  if (judged.outcome !== "valid") return failed(c, judged, locale);
  return passThrough({ c, request: judged.request, failureUri: judged.failureUri, locale }, nowInSeconds());
}

/**
 * A browser's live session passes through to the client (its consent, then a code) when the
 * client has `enableSso` and the request allows it: not into the sign-up view, which is asked for
 * to make an account, nor the forgotten-password view; not with `prompt=login`; not a session older than `max_age`, nor another
 * user's than `id_token_hint` names. `prompt=select_account` first asks whether to continue as
 * that user (`chosen` once answered). Otherwise the sign-in page, or with `prompt=none`, which
 * allows no page, `login_required` (and `consent_required` where consent is missing).
 */
async function passThrough(flow: Flow, now: number, { chosen = false } = {}): Promise<Response> {
  const { c, request } = flow;
  const { client, view, prompts } = request;
  const hintedUser = await hintedUserId(flow);
  if (hintedUser === null) {
    return redirectWithError(c, flow.failureUri, INVALID_HINT, request.state);
  }
  // The sign-up and forgotten-password views are asked for to make an account or set a password.
  const asksForPage = view === "signup" || view === "password" || prompts.has("login");
  const session = client.enableSso && !asksForPage ? await presentedSession(c, now) : undefined;
  const usable =
    session !== undefined &&
    // A webview session began with an app's token, not a sign-in: it meets no max_age.
    (request.maxAge === undefined ||
      (session.method !== null && session.method !== "otp" && now - session.created <= request.maxAge)) &&
    (hintedUser === undefined || hintedUser === session.userId);
  if (prompts.has("none")) {
    if (!usable) return redirectWithError(c, flow.failureUri, LOGIN_REQUIRED, request.state);
    return afterSignIn(flow, session, { interactive: false });
  }
  if (!usable) return signInPage(flow, 200, { email: request.loginHint ?? "" });
  if (prompts.has("select_account") && !chosen) return accountPage(flow, session);
  return afterSignIn(flow, session);
}

const LOGIN_REQUIRED = { error: "login_required", description: "The user must sign in" };
const INTERACTION_REQUIRED = {
  error: "interaction_required",
  description: "The user must give a second factor",
};
const CONSENT_REQUIRED = { error: "consent_required", description: "The user must grant the client access" };
const INVALID_HINT = {
  error: "invalid_request",
  description: "Parameter 'id_token_hint' is not an ID token of ours for this client",
};

/**
 * The user an `id_token_hint` names: undefined without a hint, null for a hint that is no ID token
 * this service issued to the client (expired ones are hints still, Core §3.1.2.1), and 0 for a
 * subject that is no user any more, which no session matches.
 */
async function hintedUserId({ c, request }: Flow): Promise<number | null | undefined> {
  if (request.idTokenHint === undefined) return undefined;
  const hint = await verifiedIdTokenHint(c.env, request.idTokenHint, request.client.id);
  if (hint === null) return null;
  return (await findUserIdByUuid(c.get("db")(), hint.sub)) ?? 0;
}

/** `prompt=select_account`: continue as the signed-in user, or sign in as another. */
async function accountPage(flow: Flow, session: SignedIn): Promise<Response> {
  const text = MESSAGES[flow.locale].selectAccount;
  const emails = await findPrimaryEmails(flow.c.get("db")(), [session.userId]);
  return page(
    flow,
    200,
    text.title,
    <AccountForm {...await formContext(flow)} account={emails.get(session.userId) ?? ""} />,
  );
}

/**
 * Finishes the authorization request a sign-in link carried (`parameters`, judged again now), for
 * the user who used the link and the session it started.
 */
export async function resumeAuthorization(
  c: Context<AppEnv>,
  parameters: Record<string, string>,
  locale: Locale,
  signedIn: SignedIn,
): Promise<Response> {
  const judged = await judgeAuthorizationRequest(c.env, c.get("db")(), (name) => {
    const value = parameters[name];
    return value === undefined ? [] : [value];
  });
  if (judged.outcome !== "valid") return failed(c, judged, locale);
  return afterSignIn({ c, request: judged.request, failureUri: judged.failureUri, locale }, signedIn);
}

/**
 * The user is known: a code when they have granted the client access, or the client needs no
 * consent from a session of its own merchant, unless `prompt=consent` asks again; else the consent
 * page, with its ticket, or `consent_required` where no page may be shown (`prompt=none`).
 */
async function afterSignIn(flow: Flow, signedIn: SignedIn, { interactive = true } = {}): Promise<Response> {
  const { c, request } = flow;
  const { client } = request;
  const factorPage = await secondFactorPage(flow, signedIn, { interactive });
  if (factorPage) return factorPage;
  const autoApproved = client.autoApprove && signedIn.merchantId === client.merchantId;
  const granted = autoApproved || (await isConnected(c.get("db")(), client.id, signedIn.userId));
  if (granted && !request.prompts.has("consent")) return codeFor(flow, signedIn);
  if (!interactive) return redirectWithError(c, flow.failureUri, CONSENT_REQUIRED, request.state);
  const consent = MESSAGES[flow.locale].consent;
  const emails = await findPrimaryEmails(c.get("db")(), [signedIn.userId]);
  return page(
    flow,
    200,
    consent.title,
    <ConsentForm
      {...await formContext(flow)}
      account={emails.get(signedIn.userId) ?? ""}
      fields={requestedFields(client.fields)}
      ticket={await flowTicket(c, "consent", signedIn.sessionHash, client.id)}
    />,
  );
}

/**
 * The page that asks for the sign-in's second factor, when it needs one and has none yet: its code
 * when the user has enrolled one (every sign-in then takes it), else enrolment, when the client
 * requires a second factor of all its users or the request asks for one (`acr_values=otp`).
 * Where no page may be shown (`prompt=none`), `interaction_required`. Undefined when the sign-in
 * may go on.
 */
async function secondFactorPage(
  flow: Flow,
  signedIn: SignedIn,
  {
    interactive = true,
    status = 200 as PageStatus,
    alert = undefined as string | undefined,
    shown = undefined as string | undefined,
  } = {},
): Promise<Response | undefined> {
  const { c, request } = flow;
  const required =
    signedIn.secondFactor || request.client.requireSecondFactor || asksForSecondFactor(request.acrValues);
  if (!required || hadSecondFactor(signedIn.method)) return undefined;
  if (!interactive) return redirectWithError(c, flow.failureUri, INTERACTION_REQUIRED, request.state);
  // Setting one up changes how the account signs in: not on an old session, nor a webview's.
  if (!signedIn.secondFactor && !signedInRecently(signedIn, nowInSeconds())) return signInPage(flow, 200);
  const text = MESSAGES[flow.locale].secondFactor;
  const context = await formContext(flow);
  const ticket = await flowTicket(c, "factor", signedIn.sessionHash, request.client.id);
  if (signedIn.secondFactor) {
    return page(flow, status, text.title, <SecondFactorForm {...context} ticket={ticket} alert={alert} />);
  }
  const emails = await findPrimaryEmails(c.get("db")(), [signedIn.userId]);
  const user = { id: signedIn.userId, email: emails.get(signedIn.userId) ?? "" };
  const shownAgain = await enrolment(c.env, user, nowInSeconds(), shown);
  return page(
    flow,
    status,
    text.enrolTitle,
    <EnrolForm
      locale={flow.locale}
      clientName={request.client.name}
      action="/oauth/authorize"
      enrolment={shownAgain.ticket}
      secret={shownAgain.secret}
      qrCode={shownAgain.qrCode}
      alert={alert}
    >
      <RequestFields {...context} />
      <input type="hidden" name="factor" value={ticket} />
    </EnrolForm>,
  );
}

/** `action=passkey`: the assertion the passkey script posted; a passkey signs in on its own. */
async function passkeySignIn(flow: Flow, form: URLSearchParams, now: number): Promise<Response> {
  const { c, request, locale } = flow;
  const { client } = request;
  const text = MESSAGES[locale].signIn;
  const signIn = await signInWithPasskey(c, client, form.get("challenge") ?? "", form.get("credential") ?? "", now);
  if (signIn.outcome === "refused") {
    const again = { passkeyAutofill: false };
    if (signIn.reason === "account") return signInPage(flow, 403, { alert: text.refused, ...again });
    if (signIn.reason === "expired") return signInPage(flow, 400, { alert: text.formExpired, ...again });
    const alert = signIn.reason === "unknown" ? text.passkeyUnknown : text.passkeyFailed;
    return signInPage(flow, 401, { alert, ...again });
  }
  const db = c.get("db")();
  const session = await newSessionId(c.env);
  await startSession(
    c,
    session,
    {
      userId: signIn.userId,
      client,
      // The passkey form has no "keep me signed in": a session that ends with the browser.
      lifetime: BROWSER_SESSION_LIFETIME,
      persistent: false,
      method: signIn.method,
      writes: [recordSignIn(db, signIn.userId, now)],
    },
    now,
  );
  return afterSignIn(flow, {
    userId: signIn.userId,
    clientId: client.id,
    sessionHash: session.idHash,
    merchantId: client.merchantId,
    created: now,
    method: signIn.method,
    // Whether the user has an authenticator matters no more: a passkey is two factors already.
    secondFactor: false,
  });
}

/** `action=otp`: the second factor's code; the sign-in goes on once it is taken. */
async function secondFactorPosted(flow: Flow, session: SignedIn, form: URLSearchParams, now: number) {
  const { c, request, locale } = flow;
  const { client } = request;
  const checked = await checkSecondFactor(c, client, session.userId, form.get("code")?.trim() ?? "", now);
  if (checked.outcome === "passed") {
    const db = c.get("db")();
    await db.batch(secondFactorGiven(c, client, session, checked.factor, now));
    return afterSignIn(flow, { ...session, method: withSecondFactor(session.method) });
  }
  const text = MESSAGES[locale];
  if (checked.outcome === "throttled") {
    const page = await secondFactorPage(flow, session, { status: 429, alert: text.signIn.throttled });
    page?.headers.set("Retry-After", String(checked.retryAfter));
    return page!;
  }
  return (await secondFactorPage(flow, session, { status: 401, alert: text.secondFactor.wrong }))!;
}

/** `action=enrol`: the first code of the authenticator the enrolment page showed; then the recovery codes. */
async function enrolled(flow: Flow, session: SignedIn, form: URLSearchParams, now: number) {
  const { c, request, locale } = flow;
  const text = MESSAGES[locale].secondFactor;
  const code = form.get("code")?.trim() ?? "";
  const enrolment = await enrolSecondFactor(c, request.client, session, form.get("enrolment") ?? "", code, now);
  switch (enrolment.outcome) {
    case "expired":
      return (await secondFactorPage(flow, session, { status: 400, alert: text.enrolExpired }))!;
    case "wrong":
      // The same secret again: the app holds it already.
      return (await secondFactorPage(flow, session, {
        status: 401,
        alert: text.wrong,
        shown: form.get("enrolment") ?? "",
      }))!;
    case "enrolled already":
      return (await secondFactorPage(flow, { ...session, secondFactor: true }))!;
  }
  const ticket = await flowTicket(c, "factor", session.sessionHash, request.client.id);
  return page(
    flow,
    200,
    text.codesTitle,
    <RecoveryCodesForm {...await formContext(flow)} ticket={ticket} codes={enrolment.recoveryCodes} />,
  );
}

/** The code, bound to the request and, for OpenID Connect, to the sign-in its ID tokens describe. */
async function codeFor({ c, request }: Flow, signedIn: SignedIn): Promise<Response> {
  const openId = request.scopes.includes("openid");
  const { idToken, userinfo } = request.claims;
  return redirectWithCode(c, {
    clientId: request.client.id,
    userId: signedIn.userId,
    redirectUri: request.redirectUri,
    state: request.state,
    codeChallenge: request.codeChallenge,
    scope: request.scopes.join(" "),
    ...(openId && {
      nonce: request.nonce,
      signIn: {
        authTime: signedIn.created,
        sid: await sessionSid(c.env, signedIn.sessionHash),
        method: signedIn.method,
      },
    }),
    ...(idToken.length + userinfo.length > 0 && { claims: request.claims }),
  });
}

async function signInPage(
  flow: Flow,
  status: PageStatus,
  props: { alert?: string; email?: string; passkeyAutofill?: boolean; profile?: Record<string, string> } = {},
  headers: Record<string, string> = {},
): Promise<Response> {
  const text = MESSAGES[flow.locale].signIn;
  const { view } = flow.request;
  const titles = { signup: text.signUpTitle, signin: text.linkTitle, password: text.resetTitle, login: text.title };
  // Not where an account is made or a password set: the login and link views.
  const passkey =
    view === "login" || view === "signin" ? await signInPrompt(flow.c.env, flow.request.client.id) : undefined;
  const fields = view === "signup" ? signUpFields(flow.request.client.fields) : [];
  const form = (
    <SignInForm {...await formContext(flow)} view={view} passkey={passkey} signUpFields={fields} {...props} />
  );
  return page(flow, status, titles[view], form, headers, { passkeys: passkey !== undefined });
}

async function formContext(flow: Flow): Promise<FormContext> {
  const { locale, request } = flow;
  return { locale, clientName: request.client.name, parameters: request.parameters, csrf: await csrfToken(flow.c) };
}

function page(
  { c, request, failureUri, locale }: Flow,
  status: PageStatus,
  title: string,
  body: Child,
  headers: Record<string, string> = {},
  { passkeys = false } = {},
): Promise<Response> {
  return renderPage(
    c,
    status,
    { locale, title, body },
    {
      ...clientBranding(request.client),
      redirectsTo: [request.redirectUri, failureUri],
      passkeys,
      languages: (other) => `/oauth/authorize?${new URLSearchParams({ ...request.parameters, locale: other })}`,
      headers,
    },
  );
}

function failed(
  c: Context<AppEnv>,
  judged: Exclude<Awaited<ReturnType<typeof judgeAuthorizationRequest>>, { outcome: "valid" }>,
  locale: Locale,
): Response | Promise<Response> {
  if (judged.outcome === "redirect") return redirectWithError(c, judged.uri, judged.failure, judged.state);
  return requestInvalidPage(c, locale, judged.failure.error, judged.client);
}

/**
 * A request that cannot go back to its client: nowhere registered to send the error. The way back
 * is the client's registered home page (`client_uri`), where the client is known and has one; the
 * page wears the client's colours where it is known. It has no language switch: its links would
 * carry the refused request (an unregistered redirect URI among it) on, and the page echoes none
 * of it.
 */
function requestInvalidPage(
  c: Context<AppEnv>,
  locale: Locale,
  error = "invalid_request",
  client?: { name: string; clientUri: string | null; css: Record<string, unknown>; logoUri: string | null },
): Promise<Response> {
  const text = MESSAGES[locale];
  return renderPage(
    c,
    400,
    {
      locale,
      title: text.requestInvalid.title,
      body: (
        <>
          <p>{text.requestInvalid.text}</p>
          <p>
            <code>{error}</code>
          </p>
          <WayBack locale={locale} back={client?.clientUri ? { href: client.clientUri, client } : undefined} />
        </>
      ),
    },
    client && clientBranding(client),
  );
}
