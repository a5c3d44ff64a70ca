/**
 * Grant-row refresh tokens, issued before new grants' tokens became self-contained
 * (self-contained-refresh-tokens.ts), and rotated as before while their grants are refreshed; the
 * grace window and the lifetime below serve both forms. `<locator>.<secret>`, a random id of the
 * grant that nothing but its refresh tokens ever carries (not its access tokens' `grant`, the
 * family), and 256 random bits, base64url; stored only as a keyed hash (never the token), valid for
 * 30 days, bound to a client and a user, rotated on every use. A grant is one row, found by its
 * locator (`token_hash` `rt:<locator>`), whose current token's hash is replaced in place: a refresh
 * is one D1 round trip and writes the row and one index entry. As only the grant's own refresh
 * tokens name the locator, a token that names it but is not the current one (nor, within the grace
 * window, the one that made it) was one of them, whatever number of rotations since: reuse
 * (docs/oauth.md, "Refresh tokens"). Tokens issued before (a secret alone) were a row each; their
 * rotation starts a grant row.
 */
import type { Bindings } from "../env";
import type { Presented, RefreshTokenRecord } from "../db/queries/refresh-tokens";
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

/** A grant's next token, for the row `key` names: the token, its keyed hash, and until when it is valid. */
export async function nextRefreshToken(env: Bindings, now: number, key: string) {
  const token = `${key.slice(LOCATOR_KEY_PREFIX.length)}.${randomToken(REFRESH_TOKEN_BYTES)}`;
  const secretHash = await protectSecret(keyRing(env), token);
  return { token, secretHash, created: now, expires: now + REFRESH_TOKEN_LIFETIME };
}

/**
 * A grant-row grant's first token, its locator's row key (`token_hash`) and its keyed hash: what
 * a token of the earlier form rotates into (new grants' tokens are self-contained).
 */
export async function newRefreshToken(env: Bindings, now: number) {
  const tokenHash = locatorKey(newLocator());
  return { ...(await nextRefreshToken(env, now, tokenHash)), tokenHash };
}

/**
 * What a presented token names, to find its row by: its grant's locator (if it has one), and the
 * forms it may be stored in (under the current key, or during a key rotation the previous).
 */
export async function presentedRefreshToken(env: Bindings, token: string): Promise<Presented> {
  const locator = refreshTokenLocator(token);
  const tokenHashes = await protectedForms(keyRing(env), token);
  return { tokenHashes, locatorKey: locator === null ? null : locatorKey(locator) };
}

/** A family for the tokens that one grant starts. */
export function newRefreshTokenFamily(): string {
  return randomToken(16);
}

const LOCATOR_BYTES = 16;
/** A grant's locator: 128 random bits, base64url. */
export const LOCATOR = /^[A-Za-z0-9_-]{22}$/;

/** A new grant's random locator. */
export function newLocator(): string {
  return randomToken(LOCATOR_BYTES);
}

const LOCATOR_KEY_PREFIX = "rt:";

/** The `token_hash` of the grant row a locator names. */
function locatorKey(locator: string): string {
  return `${LOCATOR_KEY_PREFIX}${locator}`;
}

/** The grant a presented token names by its locator, or null for a token of the earlier form (or none of ours). */
function refreshTokenLocator(token: string): string | null {
  const dot = token.indexOf(".");
  if (dot === -1) return null;
  const locator = token.slice(0, dot);
  return LOCATOR.test(locator) ? locator : null;
}

/**
 * Whether `token` was rotated by its own use less than ROTATION_GRACE_SECONDS ago: presenting it
 * again then replaces its successor if that is still unused, rather than counting as reuse.
 */
export function inRotationGrace(token: Pick<RefreshTokenRecord, "rotated">, now: number): boolean {
  return token.rotated !== null && now - token.rotated < ROTATION_GRACE_SECONDS;
}
