/**
 * Authenticator apps' codes, TOTP (RFC 6238) as every app takes it: SHA-1, 6 digits, 30 seconds,
 * a 160-bit secret (RFC 4226 §4). otpauth computes and compares the codes; the step a code was
 * for comes back, so that the caller can refuse it a second time.
 */
import { Secret, TOTP } from "otpauth";
import { renderSVG } from "uqr";

const PERIOD = 30;
const DIGITS = 6;
/** A code of the step before or after the current one is taken too: clocks drift, people type slowly. */
const WINDOW = 1;
const SIX_DIGITS = /^\d{6}$/;

/** A new secret, base32, as authenticator apps take it typed in. */
export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

const totp = (secret: string, issuer = "", label = "") =>
  new TOTP({ issuer, label, secret: Secret.fromBase32(secret), algorithm: "SHA1", digits: DIGITS, period: PERIOD });

/** The otpauth:// URI an authenticator app reads from the QR code (Key Uri Format). */
export function totpUri(secret: string, issuer: string, account: string): string {
  return totp(secret, issuer, account).toString();
}

/** The URI as a QR code, an SVG of rectangles and one path: no script, no style, no fetch. */
export function qrCodeSvg(text: string): string {
  return renderSVG(text, { border: 2 });
}

/** Whether `code` looks like an authenticator's code (six digits, spaces allowed), as against a recovery code. */
export function isTotpCode(code: string): boolean {
  return SIX_DIGITS.test(code.replace(/\s/g, ""));
}

/** The time step `code` is the code of, within the window around `nowMs`; null for none. */
export function totpStep(secret: string, code: string, nowMs: number): number | null {
  const token = code.replace(/\s/g, "");
  if (!SIX_DIGITS.test(token)) return null;
  const delta = totp(secret).validate({ token, timestamp: nowMs, window: WINDOW });
  return delta === null ? null : Math.floor(nowMs / 1000 / PERIOD) + delta;
}
