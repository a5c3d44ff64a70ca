/**
 * Refresh tokens: `<family>.<secret>`, the grant's family id (which its access tokens carry
 * already) and 256 random bits, base64url, stored only as a keyed hash of the whole (never the
 * token), valid for 30 days, bound to a client and a user, rotated on every use. A grant is one
 * row, its current token replaced in place, which keeps the grant's last tokens' hashes: a refresh
 * is one D1 round trip and writes one row, and a token presented again is found by its family
 * (docs/edge.md, "Refresh in one round trip"). Tokens issued before (a secret alone) were a row
 * each; their rotation starts a grant row of the new form.
 */
import type { Bindings } from "../env";
import type { RefreshTokenRecord } from "../db/queries/refresh-tokens";
import { keyRing, protectedForms, protectSecret } from "../security/data-protection";
import { randomToken } from "../security/random-token";

export const REFRESH_TOKEN_LIFETIME = 30 * 24 * 3600;
const REFRESH_TOKEN_BYTES = 32;
/**
 * How long after a rotation the client may present the rotated token again and be answered anew
 * (Okta's default; Auth0 and Ory Hydra offer the same): when the rotation was stored but its answer
 * was lost, the client still holds only the old token, and its retry must not read as reuse.
 */
export const ROTATION_GRACE_SECONDS = 30;

/** A new token of the grant `family`, what is stored of it, and until when it is valid. */
export async function newRefreshToken(env: Bindings, now: number, family: string) {
  const token = `${family}.${randomToken(REFRESH_TOKEN_BYTES)}`;
  const tokenHash = await protectSecret(keyRing(env), token);
  return { token, tokenHash, created: now, expires: now + REFRESH_TOKEN_LIFETIME };
}

/** The forms a presented token may be stored in: under the current key, or during a key rotation the previous. */
export function refreshTokenForms(env: Bindings, token: string): Promise<string[]> {
  return protectedForms(keyRing(env), token);
}

/** A family for the tokens that one grant starts. */
export function newRefreshTokenFamily(): string {
  return randomToken(16);
}

const FAMILY = /^[A-Za-z0-9_-]{22}$/;

/** The grant a presented token names, or null for a token of the earlier form (or none of ours). */
export function refreshTokenFamily(token: string): string | null {
  const family = token.slice(0, token.indexOf("."));
  return FAMILY.test(family) ? family : null;
}

/**
 * Whether `token` was rotated by its own use less than ROTATION_GRACE_SECONDS ago: presenting it
 * again then replaces its successor if that is still unused, rather than counting as reuse.
 */
export function inRotationGrace(token: RefreshTokenRecord, now: number): boolean {
  return token.rotated !== null && now - token.rotated < ROTATION_GRACE_SECONDS;
}
