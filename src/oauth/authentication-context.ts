/**
 * What a sign-in is worth (docs/factors.md): the Authentication Context Class (`acr`, SPiD's
 * values, which its SDKs send as `acr_values`) and Methods References (`amr`, RFC 8176) of each
 * way of signing in, and whether a sign-in meets what an authorization request, its client or
 * the user's own second factor asks for.
 */
import type { SignInMethod } from "../schemas/requested-claims";

/**
 * A link mailed to the user proves the mailbox: RFC 8176 has no value for it, so `email`, and
 * SPiD's `otp-email` class. A second factor (an authenticator's code, or a recovery code, both
 * one-time passwords) adds `otp` and `mfa`, and the class `otp`, SPiD's class of two factors,
 * which a passkey meets on its own.
 */
const AUTHENTICATION_CONTEXT: Record<SignInMethod, { acr: string; amr: string[] }> = {
  pwd: { acr: "password", amr: ["pwd"] },
  email: { acr: "otp-email", amr: ["email"] },
  "pwd+otp": { acr: "otp", amr: ["pwd", "otp", "mfa"] },
  "email+otp": { acr: "otp", amr: ["email", "otp", "mfa"] },
  // A second factor given in a session no sign-in started (a webview's, which an app's token did).
  otp: { acr: "otp", amr: ["otp"] },
  // A passkey with user verification is two factors in one: the device, and its PIN or biometric.
  // Hardware-bound, or synced (backup eligible): RFC 8176's hwk and swk.
  hwk: { acr: "otp", amr: ["hwk", "user", "mfa"] },
  swk: { acr: "otp", amr: ["swk", "user", "mfa"] },
};

export const ACR_VALUES_SUPPORTED = [...new Set(Object.values(AUTHENTICATION_CONTEXT).map(({ acr }) => acr))];

/** The ID token's `acr` and `amr` for a sign-in by `method`. */
export function authenticationContext(method: SignInMethod): { acr: string; amr: string[] } {
  return AUTHENTICATION_CONTEXT[method];
}

/**
 * How long a sign-in allows changes to how the user signs in: adding or removing a passkey, setting
 * up or turning off an authenticator (the account page, and set-up within a sign-in).
 */
export const REAUTHENTICATION_SECONDS = 600;

/**
 * Whether a session's sign-in happened in the last REAUTHENTICATION_SECONDS, with a first factor:
 * a webview's session (an app's token opened it, `null`), even with a second factor given since
 * (`otp`), never is one.
 */
export function signedInRecently(session: { method: SignInMethod | null; created: number }, now: number): boolean {
  return session.method !== null && session.method !== "otp" && now - session.created <= REAUTHENTICATION_SECONDS;
}

/** Whether a sign-in had two factors: a second factor's code, or a passkey. */
export function hadSecondFactor(method: SignInMethod | null): boolean {
  return method !== null && AUTHENTICATION_CONTEXT[method].acr === "otp";
}

/** The method a sign-in by `method` becomes once its second factor is given. */
export function withSecondFactor(method: SignInMethod | null): SignInMethod {
  if (method === null) return "otp";
  if (method.startsWith("email")) return "email+otp";
  return method.startsWith("pwd") ? "pwd+otp" : method;
}

/**
 * Whether `acr_values` asks for a second factor: the classes are in order of preference, and any
 * of them will do (OpenID Connect Core §3.1.2.1), so only when every class named that we know is
 * `otp`. Classes we do not know are left out: the parameter is a voluntary request.
 */
export function asksForSecondFactor(acrValues: readonly string[]): boolean {
  const known = acrValues.filter((value) => ACR_VALUES_SUPPORTED.includes(value));
  return known.length > 0 && known.every((value) => value === "otp");
}
