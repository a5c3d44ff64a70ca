/**
 * CSRF protection for the browser forms: a signed double-submit cookie. The browser holds a random
 * value in an HttpOnly, SameSite=Lax cookie (`__Host-` on https, so no subdomain can plant one);
 * each form carries the value's keyed hash. A POST is taken only when both arrive and agree: a
 * page of another site can neither read the cookie nor, with SameSite=Lax, send it along.
 */
import type { Context } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import type { AppEnv } from "../env";
import { hashSecret, keyRing, macMatches } from "../security/data-protection";
import { randomToken } from "../security/random-token";
import { cookieSecurity } from "./sessions";

const CSRF_COOKIE = "csrf";
/** The cookie value's length: 32 random bytes, base64url. */
const CSRF_VALUE = /^[A-Za-z0-9_-]{43}$/;

/** The token to put in a form; sets the cookie when the browser has none yet. */
export async function csrfToken(c: Context<AppEnv>): Promise<string> {
  const security = cookieSecurity(c);
  let value = getCookie(c, CSRF_COOKIE, security.prefix);
  if (!value || !CSRF_VALUE.test(value)) {
    value = randomToken();
    setCookie(c, CSRF_COOKIE, value, { path: "/", httpOnly: true, sameSite: "Lax", ...security });
  }
  return formToken(c, value);
}

/** Whether the form's token matches the browser's cookie. */
export async function csrfTokenValid(c: Context<AppEnv>, token: string | null): Promise<boolean> {
  const value = getCookie(c, CSRF_COOKIE, cookieSecurity(c).prefix);
  if (!value || !CSRF_VALUE.test(value) || !token) return false;
  // A form shown before a key rotation's switch is still taken after it.
  return macMatches(keyRing(c.env), `csrf:${value}`, token);
}

function formToken(c: Context<AppEnv>, value: string): Promise<string> {
  return hashSecret(c.env.DATA_PROTECTION_KEY, `csrf:${value}`);
}
