/**
 * Refresh tokens: 256 random bits, base64url, stored only as a keyed hash (never the token), valid
 * for 30 days, bound to a client and a user, rotated on every use within a family.
 */
import { base64url } from "jose";
import type { Bindings } from "../env";
import { hashSecret } from "../security/data-protection";

export const REFRESH_TOKEN_LIFETIME = 30 * 24 * 3600;
const REFRESH_TOKEN_BYTES = 32;

/** A new token, what is stored of it, and until when it is valid. */
export async function newRefreshToken(env: Bindings, now: number) {
  const token = base64url.encode(crypto.getRandomValues(new Uint8Array(REFRESH_TOKEN_BYTES)));
  return { token, tokenHash: await refreshTokenHash(env, token), created: now, expires: now + REFRESH_TOKEN_LIFETIME };
}

export function refreshTokenHash(env: Bindings, token: string): Promise<string> {
  return hashSecret(env.DATA_PROTECTION_KEY, token);
}

/** A family for the tokens that one grant starts. */
export function newRefreshTokenFamily(): string {
  return base64url.encode(crypto.getRandomValues(new Uint8Array(16)));
}
