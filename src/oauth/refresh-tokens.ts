/**
 * Refresh tokens: 256 random bits, base64url, stored only as a keyed hash (never the token), valid
 * for 30 days, bound to a client and a user, rotated on every use within a family.
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

/** A new token, what is stored of it, and until when it is valid. */
export async function newRefreshToken(env: Bindings, now: number) {
  const token = randomToken(REFRESH_TOKEN_BYTES);
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

/**
 * Whether `token` was rotated by its own use less than ROTATION_GRACE_SECONDS ago: presenting it
 * again then replaces its successor if that is still unused, rather than counting as reuse.
 */
export function inRotationGrace(token: RefreshTokenRecord, now: number): boolean {
  return token.rotated !== null && now - token.rotated < ROTATION_GRACE_SECONDS;
}
