/**
 * /oauth/account: the signed-in user's passkeys and authenticator app. Changes need a recent
 * sign-in; until then the page asks to confirm it is the user, and shows the rest without its
 * buttons. Plain forms, with the passkey script only for adding and confirming with a passkey.
 */
import type { Child } from "hono/jsx";
import type { PasskeyPrompt } from "../oauth/factors/passkeys";
import { formatDatetime } from "../http/datetime";
import { PasskeyForm } from "./authorize";
import type { Locale } from "./locale";
import { MESSAGES } from "./messages";
import { Alert, CodeInput } from "./page";

export type AccountView = {
  locale: Locale;
  csrf: string;
  email: string;
  /** Whether the session signed in recently enough to change anything. */
  fresh: boolean;
  hasPassword: boolean;
  passkeys: { id: string; name: string; created: number; lastUsed: number | null }[];
  /** When the authenticator was set up, and how many recovery codes are left; null without one. */
  authenticator: { since: number; codesLeft: number } | null;
  /** Adding a passkey (fresh), or confirming with one (not fresh); none where passkeys cannot work. */
  passkeyPrompt: PasskeyPrompt | undefined;
  notice?: string | undefined;
  alert?: string | undefined;
  /** Off after a passkey failed to confirm: the browser's autofill would offer it again at once. */
  passkeyAutofill?: boolean | undefined;
};

const day = (time: number) => formatDatetime(time).slice(0, 10);

/** What every form of the account page posts: its CSRF token, and the page's locale, which the answer keeps. */
export function AccountFields(props: { csrf: string; locale: Locale }) {
  return (
    <>
      <input type="hidden" name="csrf" value={props.csrf} />
      <input type="hidden" name="locale" value={props.locale} />
    </>
  );
}

function ActionForm(props: {
  csrf: string;
  locale: Locale;
  action: string;
  label: string;
  secondary?: boolean;
  children?: Child;
}) {
  return (
    <form method="post" action="/oauth/account">
      <AccountFields {...props} />
      {props.children}
      <button type="submit" name="action" value={props.action} class={props.secondary ? "secondary" : undefined}>
        {props.label}
      </button>
    </form>
  );
}

export function AccountPage(props: AccountView) {
  const text = MESSAGES[props.locale].account;
  const signIn = MESSAGES[props.locale].signIn;
  return (
    <>
      <p>{text.signedInAs(props.email)}</p>
      {props.notice && <p role="status">{props.notice}</p>}
      <Alert text={props.alert} />
      {!props.fresh && <ConfirmForm {...props} />}
      <h2>{text.passkeys}</h2>
      {props.passkeys.length === 0 ? (
        <p>{text.noPasskeys}</p>
      ) : (
        <ul class="passkeys">
          {props.passkeys.map((passkey) => (
            <li>
              <strong>{passkey.name}</strong>{" "}
              {text.passkeyUse(day(passkey.created), passkey.lastUsed === null ? null : day(passkey.lastUsed))}
              {props.fresh && (
                <ActionForm
                  csrf={props.csrf}
                  locale={props.locale}
                  action="remove-passkey"
                  label={text.remove(passkey.name)}
                  secondary
                >
                  <input type="hidden" name="passkey" value={passkey.id} />
                </ActionForm>
              )}
            </li>
          ))}
        </ul>
      )}
      {props.fresh && props.passkeyPrompt && (
        <form
          method="post"
          action="/oauth/account"
          data-passkey="create"
          data-options={props.passkeyPrompt.options}
          hidden
        >
          <AccountFields csrf={props.csrf} locale={props.locale} />
          <input type="hidden" name="action" value="add-passkey" />
          <input type="hidden" name="challenge" value={props.passkeyPrompt.challenge} />
          <input type="hidden" name="credential" value="" />
          <p class="alert" role="alert" data-passkey-error="1" hidden>
            {text.passkeyNotAdded}
          </p>
          <label for="passkey-name">{text.passkeyName}</label>
          <input id="passkey-name" name="name" type="text" maxlength={64} required />
          <button type="submit">{text.addPasskey}</button>
        </form>
      )}
      {!props.passkeyPrompt && <p>{text.passkeysUnavailable}</p>}
      <h2>{text.authenticator}</h2>
      <p>
        {props.authenticator
          ? text.authenticatorOn(day(props.authenticator.since), props.authenticator.codesLeft)
          : text.authenticatorOff}
      </p>
      {props.fresh &&
        (props.authenticator ? (
          <>
            <ActionForm csrf={props.csrf} locale={props.locale} action="renew-codes" label={text.newCodes} />
            <ActionForm csrf={props.csrf} locale={props.locale} action="remove-factor" label={text.turnOff} secondary />
          </>
        ) : (
          <ActionForm csrf={props.csrf} locale={props.locale} action="set-up" label={text.setUp} />
        ))}
      {!props.fresh && props.passkeyPrompt && (
        <PasskeyForm
          action="/oauth/account"
          prompt={props.passkeyPrompt}
          label={signIn.passkey}
          failed={signIn.passkeyFailed}
          autofill={props.passkeyAutofill}
        >
          <AccountFields csrf={props.csrf} locale={props.locale} />
        </PasskeyForm>
      )}
    </>
  );
}

/** Confirming it is the user: the password (and the authenticator's code, for a user who has one). */
function ConfirmForm(props: AccountView) {
  const text = MESSAGES[props.locale];
  if (!props.hasPassword) return <p>{text.account.confirmIntro}</p>;
  return (
    <form method="post" action="/oauth/account">
      <p>{text.account.confirmIntro}</p>
      <AccountFields csrf={props.csrf} locale={props.locale} />
      <label for="password">{text.signIn.password}</label>
      <input id="password" name="password" type="password" autocomplete="current-password" required />
      {props.authenticator && <CodeInput label={text.secondFactor.code} />}
      <button type="submit" name="action" value="confirm">
        {text.account.confirm}
      </button>
    </form>
  );
}
