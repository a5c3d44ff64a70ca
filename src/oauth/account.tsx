/**
 * GET and POST /oauth/account: the signed-in user's own page for passkeys and the authenticator
 * app (docs/factors.md "Managing sign-in methods"). It acts for the browser's session, at the
 * client the session was started through (its throttle, its audit trail). Anything that changes
 * how the user signs in needs a sign-in in the last 10 minutes (with the second factor, for a
 * user who has one): otherwise the page asks to confirm with the password or a passkey first,
 * which renews the session's sign-in. Every post carries the CSRF token.
 */
import { type Context, Hono } from "hono";
import * as z from "zod/mini";
import { deletePasskey } from "../db/queries/passkeys";
import { deleteSecondFactor, reauthenticateSession, replaceRecoveryCodes } from "../db/queries/second-factor";
import { signInMethods } from "../db/queries/sign-in-methods";
import type { AppEnv } from "../env";
import { auditEntry, type AuditRecord, type SignInClient, signInEntry } from "../events/audit";
import { describeRoute } from "../http/container";
import { nowInSeconds } from "../http/datetime";
import { isForm } from "../http/media-type";
import { AccountFields, AccountPage } from "../pages/account";
import { EnrolForm, RecoveryCodes } from "../pages/authorize";
import { LOCALE_PARAMETER, type Locale, pageLocale } from "../pages/locale";
import { MESSAGES } from "../pages/messages";
import { type PageStatus, renderPage, sameAddressIn } from "../pages/page";
import { hadSecondFactor, signedInRecently } from "./authentication-context";
import { csrfToken, csrfTokenValid } from "./csrf";
import { addPasskey, registrationPrompt, signInPrompt, signInWithPasskey } from "./factors/passkeys";
import { newRecoveryCodes, recoveryCodeHash } from "./factors/recovery-codes";
import { checkSecondFactor, enrolment, enrolSecondFactor } from "./factors/second-factor";
import { signInWithPassword } from "./password-sign-in";
import { presentedSession, type SignedIn } from "./sessions";

const MAX_PASSKEY_NAME = 64;

type Account = { c: Context<AppEnv>; locale: Locale; session: SignedIn; client: SignInClient; now: number };

export const accountRoutes = new Hono<AppEnv>()
  .get(
    "/account",
    describeRoute({
      name: "Show the user's sign-in methods",
      controller: "oauth/account#show",
      description:
        "The browser's signed-in user's passkeys and authenticator app (HTML): add and remove passkeys, set up or turn off the authenticator, new recovery codes. Changes need a sign-in in the last 10 minutes. Without a session: a page that says to sign in first (401).",
      parameters: [LOCALE_PARAMETER],
      success: { data: z.string(), bare: true, mediaType: "text/html" },
    }),
    async (c) => {
      const locale = pageLocale(c.req.query("locale"), c.req.header("Accept-Language"));
      const account = await accountOf(c, locale);
      return account ? accountPage(account, 200) : signInFirst(c, locale);
    },
  )
  .post(
    "/account",
    describeRoute({
      name: "Change the user's sign-in methods",
      controller: "oauth/account#update",
      description:
        "The account page's forms: `csrf` and `action`: `confirm` (`password`, and `code` for a user with an authenticator) or `passkey` (`challenge`, `credential`) renew the sign-in; `add-passkey` (`name`, `challenge`, `credential`), `remove-passkey` (`passkey`), `set-up`, `enrol` (`enrolment`, `code`), `renew-codes` and `remove-factor` need a recent one. Answers the page (HTML).",
      success: { data: z.string(), bare: true, mediaType: "text/html" },
    }),
    async (c) => {
      const fallback = pageLocale(undefined, c.req.header("Accept-Language"));
      if (!isForm(c.req.header("Content-Type"))) return signInFirst(c, fallback, 400);
      const form = new URLSearchParams(await c.req.text());
      const locale = pageLocale(form.get("locale") ?? undefined, c.req.header("Accept-Language"));
      const account = await accountOf(c, locale);
      if (!account) return signInFirst(c, locale);
      const text = MESSAGES[locale];
      if (!(await csrfTokenValid(c, form.get("csrf")))) {
        return accountPage(account, 403, { alert: text.signIn.formExpired });
      }
      const action = form.get("action");
      if (action === "confirm") return confirmed(account, form);
      if (action === "passkey") return confirmedWithPasskey(account, form);
      if (!isFresh(account.session, account.now)) {
        return accountPage(account, 403, { alert: text.account.confirmIntro });
      }
      switch (action) {
        case "add-passkey":
          return passkeyAdded(account, form);
        case "remove-passkey":
          return passkeyRemoved(account, form.get("passkey") ?? "");
        case "set-up":
          return setUp(account, 200);
        case "enrol":
          return enrolled(account, form);
        case "renew-codes":
          return codesRenewed(account);
        case "remove-factor":
          return factorRemoved(account);
      }
      return accountPage(account, 400);
    },
  );

/** The browser's session and its client; none without a live session or once its client is gone. */
async function accountOf(c: Context<AppEnv>, locale: Locale): Promise<Account | undefined> {
  const now = nowInSeconds();
  const session = await presentedSession(c, now);
  if (!session || session.clientId === null || session.merchantId === null) return undefined;
  return { c, locale, session, client: { id: session.clientId, merchantId: session.merchantId }, now };
}

/** A sign-in of the last 10 minutes, with the second factor for a user who has one; not a webview's. */
function isFresh(session: SignedIn, now: number): boolean {
  return signedInRecently(session, now) && (!session.secondFactor || hadSecondFactor(session.method));
}

async function accountPage(
  account: Account,
  status: PageStatus,
  messages: { notice?: string; alert?: string; passkeyAutofill?: boolean } = {},
): Promise<Response> {
  const { c, locale, session, now } = account;
  const db = c.get("db")();
  const methods = await signInMethods(db, session.userId);
  if (!methods) return signInFirst(c, locale);
  const fresh = isFresh(session, now);
  const user = { id: session.userId, uuid: methods.uuid, email: methods.email };
  const { client } = account;
  const passkeyPrompt = fresh
    ? await registrationPrompt(c.env, db, user, client.id)
    : await signInPrompt(c.env, client.id);
  const body = (
    <AccountPage
      locale={locale}
      csrf={await csrfToken(c)}
      email={methods.email}
      fresh={fresh}
      hasPassword={methods.hasPassword}
      passkeys={methods.passkeys}
      authenticator={methods.authenticator}
      passkeyPrompt={passkeyPrompt}
      {...messages}
    />
  );
  const title = MESSAGES[locale].account.title;
  return renderPage(
    c,
    status,
    { locale, title, body },
    { passkeys: passkeyPrompt !== undefined, languages: (other) => `/oauth/account?locale=${other}` },
  );
}

function signInFirst(c: Context<AppEnv>, locale: Locale, status: PageStatus = 401): Promise<Response> {
  const text = MESSAGES[locale].account;
  return renderPage(
    c,
    status,
    { locale, title: text.title, body: <p>{text.signInFirst}</p> },
    { languages: sameAddressIn(c) },
  );
}

/** The user's audit entry of a change made here, at the session's client. */
function entry({ c, client, session, now }: Account, record: Omit<AuditRecord, "userId">) {
  const actor = { actor: "user" as const, clientId: client.id, merchantId: client.merchantId };
  return auditEntry(c, actor, { ...record, userId: session.userId }, now);
}

/** `confirm`: the password, and the authenticator's code for a user who has one, renew the sign-in. */
async function confirmed(account: Account, form: URLSearchParams): Promise<Response> {
  const { c, session, client, now, locale } = account;
  const text = MESSAGES[locale];
  const db = c.get("db")();
  const methods = await signInMethods(db, session.userId);
  if (!methods) return signInFirst(c, locale);
  const signIn = await signInWithPassword(c, client, methods.email, form.get("password") ?? "", now);
  if (signIn.outcome === "throttled") {
    return accountPage(account, 429, { alert: text.signIn.throttled }).then((page) => {
      page.headers.set("Retry-After", String(signIn.retryAfter));
      return page;
    });
  }
  if (signIn.outcome !== "signed_in" || signIn.user.id !== session.userId) {
    return accountPage(account, 401, { alert: text.signIn.wrong });
  }
  let method: "pwd" | "pwd+otp" = "pwd";
  if (signIn.user.secondFactor) {
    const checked = await checkSecondFactor(c, client, session.userId, form.get("code")?.trim() ?? "", now);
    if (checked.outcome === "throttled") {
      const page = await accountPage(account, 429, { alert: text.signIn.throttled });
      page.headers.set("Retry-After", String(checked.retryAfter));
      return page;
    }
    if (checked.outcome === "failed") return accountPage(account, 401, { alert: text.secondFactor.wrong });
    method = "pwd+otp";
  }
  return reauthenticated(account, method);
}

/** `passkey`: a passkey of the session's user renews the sign-in. */
async function confirmedWithPasskey(account: Account, form: URLSearchParams): Promise<Response> {
  const { c, session, client, now, locale } = account;
  const text = MESSAGES[locale].signIn;
  const signIn = await signInWithPasskey(c, client, form.get("challenge") ?? "", form.get("credential") ?? "", now);
  if (signIn.outcome !== "signed_in" || signIn.userId !== session.userId) {
    return accountPage(account, 401, { alert: text.passkeyFailed, passkeyAutofill: false });
  }
  return reauthenticated(account, signIn.method);
}

async function reauthenticated(account: Account, method: NonNullable<SignedIn["method"]>): Promise<Response> {
  const { c, session, client, now } = account;
  const db = c.get("db")();
  await db.batch([
    reauthenticateSession(db, session.sessionHash, method, now),
    signInEntry(c, client, session.userId, method, now),
  ]);
  return accountPage({ ...account, session: { ...session, method, created: now } }, 200);
}

async function passkeyAdded(account: Account, form: URLSearchParams): Promise<Response> {
  const { c, session, client, now, locale } = account;
  const text = MESSAGES[locale].account;
  const name = (form.get("name") ?? "").trim().slice(0, MAX_PASSKEY_NAME);
  if (name === "") return accountPage(account, 400, { alert: text.passkeyNotAdded });
  const added = await addPasskey(
    c,
    client,
    session.userId,
    { challenge: form.get("challenge") ?? "", credential: form.get("credential") ?? "", name },
    now,
  );
  // A credential id already stored (this user's, or another's) adds nothing.
  if (added.outcome !== "added") return accountPage(account, 400, { alert: text.passkeyNotAdded });
  return accountPage(account, 200, { notice: text.passkeyAdded });
}

async function passkeyRemoved(account: Account, id: string): Promise<Response> {
  const { c, session, locale } = account;
  const db = c.get("db")();
  const text = MESSAGES[locale].account;
  if (!(await deletePasskey(db, session.userId, id))) return accountPage(account, 404);
  await entry(account, { action: "user.passkey.remove" }).run();
  return accountPage(account, 200, { notice: text.passkeyRemoved });
}

/** `set-up`: a new authenticator's QR code, for a user who has none. */
async function setUp(account: Account, status: PageStatus, alert?: string, shown?: string): Promise<Response> {
  const { c, session, locale, now } = account;
  if (session.secondFactor) return accountPage(account, 200);
  const methods = await signInMethods(c.get("db")(), session.userId);
  if (!methods) return signInFirst(c, locale);
  const page = await enrolment(c.env, { id: session.userId, email: methods.email }, now, shown);
  const body = (
    <EnrolForm
      locale={locale}
      clientName={null}
      action="/oauth/account"
      enrolment={page.ticket}
      secret={page.secret}
      qrCode={page.qrCode}
      alert={alert}
    >
      <AccountFields csrf={await csrfToken(c)} locale={locale} />
    </EnrolForm>
  );
  const title = MESSAGES[locale].secondFactor.enrolTitle;
  return renderPage(c, status, { locale, title, body });
}

async function enrolled(account: Account, form: URLSearchParams): Promise<Response> {
  const { c, session, client, now, locale } = account;
  const text = MESSAGES[locale].secondFactor;
  const code = form.get("code")?.trim() ?? "";
  const enrolment = await enrolSecondFactor(c, client, session, form.get("enrolment") ?? "", code, now);
  switch (enrolment.outcome) {
    case "expired":
      return setUp(account, 400, text.enrolExpired);
    case "wrong":
      // The same secret again: the app holds it already.
      return setUp(account, 401, text.wrong, form.get("enrolment") ?? "");
    case "enrolled already":
      return accountPage(account, 200);
  }
  return recoveryCodesPage(account, enrolment.recoveryCodes);
}

async function codesRenewed(account: Account): Promise<Response> {
  const { c, session, client, now } = account;
  if (!session.secondFactor) return accountPage(account, 400);
  const db = c.get("db")();
  const codes = newRecoveryCodes();
  const hashes = await Promise.all(codes.map((code) => recoveryCodeHash(session.userId, code)));
  const owner = { userId: session.userId, clientId: client.id, merchantId: client.merchantId, created: now };
  await db.batch([
    ...replaceRecoveryCodes(db, owner, hashes as string[]),
    entry(account, { action: "user.recovery-codes.renew" }),
  ]);
  return recoveryCodesPage(account, codes);
}

async function factorRemoved(account: Account): Promise<Response> {
  const { c, session, locale } = account;
  const db = c.get("db")();
  await db.batch([...deleteSecondFactor(db, session.userId), entry(account, { action: "user.factor.remove" })]);
  return accountPage({ ...account, session: { ...session, secondFactor: false } }, 200, {
    notice: MESSAGES[locale].account.turnedOff,
  });
}

function recoveryCodesPage({ c, locale }: Account, codes: string[]): Promise<Response> {
  const text = MESSAGES[locale];
  const next = (
    <p>
      <a href={`/oauth/account?locale=${locale}`}>{text.secondFactor.continue}</a>
    </p>
  );
  const body = <RecoveryCodes locale={locale} codes={codes} next={next} />;
  return renderPage(c, 200, { locale, title: text.secondFactor.codesTitle, body });
}
