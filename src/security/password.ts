/**
 * Password hashing: PBKDF2-HMAC-SHA256 with a per-user 128-bit salt. Stored as
 * `pbkdf2-sha256$<iterations>$<salt>$<hash>` (base64url), so the iteration count can be raised
 * later without invalidating existing hashes. Runs on WebCrypto, so the Worker and the Node
 * import script share this code.
 */
import { base64url } from "jose";
import { timingSafeEqual } from "./constant-time";

/** workerd caps PBKDF2 at 100,000 iterations. */
export const PBKDF2_ITERATIONS = 100_000;
const SCHEME = "pbkdf2-sha256";
const SALT_BYTES = 16;
const HASH_BITS = 256;
const encoder = new TextEncoder();

export async function hashPassword(password: string): Promise<string> {
  const salt = crypto.getRandomValues(new Uint8Array(SALT_BYTES));
  const hash = await derive(password, salt, PBKDF2_ITERATIONS);
  return [SCHEME, PBKDF2_ITERATIONS, base64url.encode(salt), base64url.encode(hash)].join("$");
}

/** A hash of a random password, to spend the same time when the user does not exist. */
let decoyHash: Promise<string> | undefined;

/**
 * Verifies a password against a stored hash in constant time. With no stored hash (unknown user,
 * or a user without a password) it still does the full work and returns false, so response
 * times do not reveal which accounts exist.
 */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  decoyHash ??= hashPassword(crypto.randomUUID());
  const parts = (stored ?? (await decoyHash)).split("$");
  const [scheme, iterations, salt, expected] = parts;
  if (parts.length !== 4 || scheme !== SCHEME || !salt || !expected) return false;
  const rounds = Number(iterations);
  if (!Number.isInteger(rounds) || rounds < 1 || rounds > PBKDF2_ITERATIONS) return false;
  const actual = await derive(password, base64url.decode(salt), rounds);
  return timingSafeEqual(actual, base64url.decode(expected)) && stored !== null;
}

async function derive(password: string, salt: Uint8Array, iterations: number): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(password), "PBKDF2", false, ["deriveBits"]);
  const bits = await crypto.subtle.deriveBits({ name: "PBKDF2", hash: "SHA-256", salt, iterations }, key, HASH_BITS);
  return new Uint8Array(bits);
}
