/**
 * The login and consent pages of /oauth/authorize. Both are plain forms that post back to
 * /oauth/authorize with the authorization request in hidden fields (judged again on every post)
 * and the CSRF token; no script. Labels name every field, errors are announced (role=alert), and
 * the autocomplete hints let password managers and phones fill them in.
 */
import type { Child } from "hono/jsx";
import type { SignInView } from "../oauth/authorization-request";
import type { PasskeyPrompt } from "../oauth/factors/passkeys";
import { SIGN_UP_GENDERS, type SignUpField, type SignUpInput } from "../schemas/sign-up";
import type { ClientField } from "../schemas/client-fields";
import type { Locale } from "./locale";
import { MESSAGES } from "./messages";
import { Alert, CodeInput } from "./page";

export type FormContext = {
  locale: Locale;
  clientName: string;
  /** The authorization request's parameters, posted back as they came. */
  parameters: Record<string, string>;
  csrf: string;
};

export function RequestFields({ parameters, csrf, locale }: Pick<FormContext, "parameters" | "csrf" | "locale">) {
  return (
    <>
      {Object.entries(parameters).map(([name, value]) => (
        <input type="hidden" name={name} value={value} />
      ))}
      <input type="hidden" name="locale" value={locale} />
      <input type="hidden" name="csrf" value={csrf} />
    </>
  );
}

/**
 * The sign-in page in the request's view: e-mail and password with a link and a passkey as the
 * alternatives (login), or the e-mail alone for a link that signs in (signin), makes the account
 * (signup) or sets a new password (password), with a way back to the login view.
 */
export function SignInForm(
  props: FormContext & {
    view: SignInView;
    email?: string;
    alert?: string;
    passkey?: PasskeyPrompt | undefined;
    passkeyAutofill?: boolean;
    /** The sign-up view's profile inputs, and what was filled in. */
    signUpFields?: SignUpField[];
    profile?: Record<string, string>;
  },
) {
  const text = MESSAGES[props.locale].signIn;
  const { view } = props;
  const linkOnly = view !== "login";
  // The browser offers its passkeys in the address field's autofill (conditional mediation).
  const username = props.passkey ? "username webauthn" : "username";
  const intro =
    view === "signup"
      ? text.signUpIntro(props.clientName)
      : view === "signin"
        ? text.linkIntro(props.clientName)
        : view === "password"
          ? text.resetIntro
          : text.intro(props.clientName);
  const linkButton = {
    signup: text.signUpSubmit,
    password: text.resetSubmit,
    signin: text.sendLink,
    login: text.sendLink,
  };
  return (
    <>
      <p>{intro}</p>
      <Alert text={props.alert} />
      <form method="post" action="/oauth/authorize">
        <RequestFields {...props} />
        <label for="email">{text.email}</label>
        {/* Not type=email: browsers refuse internationalized addresses (åse@bücher.example) before sending. */}
        <input
          id="email"
          name="email"
          type="text"
          inputmode="email"
          autocapitalize="none"
          autocomplete={linkOnly ? "email" : username}
          required
          value={props.email ?? ""}
        />
        {view === "signup" && <ProfileInputs {...props} fields={props.signUpFields ?? []} />}
        {!linkOnly && (
          <>
            <label for="password">{text.password}</label>
            <input id="password" name="password" type="password" autocomplete="current-password" />
          </>
        )}
        {view !== "password" && (
          <label class="check">
            <input type="checkbox" name="remember" value="1" checked />
            {text.remember}
          </label>
        )}
        {!linkOnly && (
          <button type="submit" name="action" value="login">
            {text.submit}
          </button>
        )}
        <button
          type="submit"
          name="action"
          value={view === "password" ? "reset" : "link"}
          class={linkOnly ? undefined : "secondary"}
        >
          {linkButton[view]}
        </button>
      </form>
      {props.passkey && (
        <PasskeyForm
          action="/oauth/authorize"
          prompt={props.passkey}
          label={text.passkey}
          failed={text.passkeyFailed}
          autofill={props.passkeyAutofill}
        >
          <RequestFields {...props} />
        </PasskeyForm>
      )}
      {view === "login" && (
        <p>
          <a href={viewHref(props, "password")}>{text.forgotPassword}</a>
          <br />
          <a href={viewHref(props, "signup")}>{text.createAccount}</a>
        </p>
      )}
      {linkOnly && (
        <p>
          <a href={viewHref(props, "login")}>{view === "signup" ? text.haveAccount : text.withPassword}</a>
        </p>
      )}
    </>
  );
}

const AUTOCOMPLETE: Record<SignUpInput, string> = {
  givenName: "given-name",
  familyName: "family-name",
  displayName: "nickname",
  birthday: "bday",
  gender: "sex",
};

/** The profile inputs the client asks for at sign-up; those not required are marked optional. */
function ProfileInputs(props: { locale: Locale; fields: SignUpField[]; profile?: Record<string, string> }) {
  const text = MESSAGES[props.locale].signIn.profile;
  return (
    <>
      {props.fields.map(({ input, required }) => {
        const label = (
          <label for={input}>
            {text[input]} {!required && <span class="hint">{text.optional}</span>}
          </label>
        );
        const value = props.profile?.[input] ?? "";
        if (input === "gender") {
          return (
            <>
              {label}
              <select id={input} name={input} autocomplete={AUTOCOMPLETE[input]} required={required}>
                {!required && <option value="">–</option>}
                {SIGN_UP_GENDERS.map((gender) => (
                  <option value={gender} selected={value === gender}>
                    {text.genders[gender]}
                  </option>
                ))}
              </select>
            </>
          );
        }
        return (
          <>
            {label}
            <input
              id={input}
              name={input}
              type={input === "birthday" ? "date" : "text"}
              autocomplete={AUTOCOMPLETE[input]}
              required={required}
              value={value}
            />
          </>
        );
      })}
    </>
  );
}

/**
 * Signing in with a passkey: hidden until the passkey script (pages/passkey-script.ts) finds
 * WebAuthn, which then posts `action=passkey` with the assertion in `credential`; `children` are
 * the form's other fields.
 */
export function PasskeyForm(props: {
  action: string;
  prompt: PasskeyPrompt;
  label: string;
  failed: string;
  /** Off after a passkey failed: the browser's autofill would offer the same passkey again at once. */
  autofill?: boolean | undefined;
  children?: Child;
}) {
  return (
    <form
      method="post"
      action={props.action}
      data-passkey="get"
      data-options={props.prompt.options}
      data-autofill={props.autofill === false ? "off" : undefined}
      hidden
    >
      {props.children}
      <input type="hidden" name="action" value="passkey" />
      <input type="hidden" name="challenge" value={props.prompt.challenge} />
      <input type="hidden" name="credential" value="" />
      <p class="alert" role="alert" data-passkey-error="1" hidden>
        {props.failed}
      </p>
      <button type="button" class="secondary" data-passkey-start="1">
        {props.label}
      </button>
    </form>
  );
}

/** The same authorization request in another view (`login`: the request's own, without `view`). */
function viewHref({ parameters, locale }: Pick<FormContext, "parameters" | "locale">, view: SignInView): string {
  const query = new URLSearchParams({ ...parameters, locale });
  query.delete("view");
  // prompt=create opens the sign-up view: another view is asked for instead.
  const prompts = (query.get("prompt") ?? "").split(" ").filter((prompt) => prompt !== "create" && prompt !== "");
  if (prompts.length > 0) query.set("prompt", prompts.join(" "));
  else query.delete("prompt");
  if (view !== "login") query.set("view", view);
  return `/oauth/authorize?${query}`;
}

/** `prompt=select_account`: continue as `account` (the session's user), or sign in as another. */
export function AccountForm(props: FormContext & { account: string }) {
  const text = MESSAGES[props.locale].selectAccount;
  return (
    <>
      <p>{text.intro(props.clientName)}</p>
      <form method="post" action="/oauth/authorize">
        <RequestFields {...props} />
        <button type="submit" name="action" value="continue">
          {text.continueAs(props.account)}
        </button>
        <button type="submit" name="action" value="switch" class="secondary">
          {text.switch}
        </button>
      </form>
    </>
  );
}

/**
 * `ticket`: the consent ticket (oauth/flow-ticket.ts), without which approval is refused;
 * `account`: who is signed in, with the way to sign in as someone else.
 */
export function ConsentForm(props: FormContext & { fields: ClientField[]; ticket: string; account: string }) {
  const text = MESSAGES[props.locale].consent;
  return (
    <>
      <p>{text.intro(props.clientName)}</p>
      <p>{text.signedInAs(props.account)}</p>
      {props.fields.length === 0 ? (
        <p>{text.nothing}</p>
      ) : (
        <ul>
          {props.fields.map((field) => (
            <li>{text.fields[field]}</li>
          ))}
        </ul>
      )}
      <form method="post" action="/oauth/authorize">
        <RequestFields {...props} />
        <input type="hidden" name="consent" value={props.ticket} />
        <button type="submit" name="action" value="approve">
          {text.approve}
        </button>
        <button type="submit" name="action" value="deny" class="secondary">
          {text.deny}
        </button>
      </form>
      <form method="post" action="/oauth/authorize">
        <RequestFields {...props} />
        <button type="submit" name="action" value="switch" class="link">
          {text.notYou}
        </button>
      </form>
    </>
  );
}

/** The second factor's code (an authenticator's, or a recovery code); `ticket` is the flow's factor ticket. */
export function SecondFactorForm(props: FormContext & { ticket: string; alert?: string }) {
  const text = MESSAGES[props.locale].secondFactor;
  return (
    <>
      <p>{text.intro}</p>
      <Alert text={props.alert} />
      <form method="post" action="/oauth/authorize">
        <RequestFields {...props} />
        <input type="hidden" name="factor" value={props.ticket} />
        <CodeInput label={text.code} hint={text.hint} />
        <button type="submit" name="action" value="otp">
          {text.verify}
        </button>
      </form>
    </>
  );
}

/**
 * Enrolment of an authenticator: its QR code (an inline SVG, rendered here), the key to type in
 * instead, and the first code, posted to `action` with `children` (the page's own fields) and
 * `enrolment`, the sealed ticket that carries the secret. `clientName` asks for it, in a sign-in.
 */
export function EnrolForm(props: {
  locale: Locale;
  clientName: string | null;
  action: string;
  enrolment: string;
  qrCode: string;
  secret: string;
  alert?: string | undefined;
  children?: Child;
}) {
  const text = MESSAGES[props.locale].secondFactor;
  return (
    <>
      <p>{text.enrolIntro(props.clientName)}</p>
      <Alert text={props.alert} />
      <div class="qr" role="img" aria-label={text.qrLabel} dangerouslySetInnerHTML={{ __html: props.qrCode }} />
      <p>
        {text.manual} <code class="key">{props.secret.match(/.{1,4}/g)!.join(" ")}</code>
      </p>
      <form method="post" action={props.action}>
        {props.children}
        <input type="hidden" name="enrolment" value={props.enrolment} />
        <label for="code">{text.enrolCode}</label>
        <input
          id="code"
          name="code"
          type="text"
          inputmode="numeric"
          autocomplete="one-time-code"
          pattern="[0-9 ]*"
          required
        />
        <button type="submit" name="action" value="enrol">
          {text.enrol}
        </button>
      </form>
    </>
  );
}

/** The recovery codes, shown once, and `next`: the way on (a form's button, or a link). */
export function RecoveryCodes(props: { locale: Locale; codes: string[]; next: Child }) {
  const text = MESSAGES[props.locale].secondFactor;
  return (
    <>
      <p>{text.codesIntro}</p>
      <ul class="codes">
        {props.codes.map((code) => (
          <li>
            <code>{code}</code>
          </li>
        ))}
      </ul>
      {props.next}
    </>
  );
}

/** The recovery codes of an enrolment within a sign-in, and the way on to the client. */
export function RecoveryCodesForm(props: FormContext & { ticket: string; codes: string[] }) {
  const text = MESSAGES[props.locale].secondFactor;
  return (
    <RecoveryCodes
      locale={props.locale}
      codes={props.codes}
      next={
        <form method="post" action="/oauth/authorize">
          <RequestFields {...props} />
          <input type="hidden" name="factor" value={props.ticket} />
          <button type="submit" name="action" value="resume">
            {text.continue}
          </button>
        </form>
      }
    />
  );
}
