/**
 * Recovery codes: ten single-use codes shown once when a second factor is enrolled, for the day
 * the authenticator is lost. Each is 80 random bits, 16 base32 characters in groups of four, and
 * is stored as a SHA-256 of the user and the code: not under the data-protection key, so that a
 * key rotation (which cannot re-hash a code nobody holds) never ends them, and at 80 bits a hash
 * that leaks still cannot be reversed by guessing.
 */
import { base64url } from "jose";

export const RECOVERY_CODE_COUNT = 10;
const ALPHABET = "abcdefghijklmnopqrstuvwxyz234567";
const LENGTH = 16;

/** Ten new codes, as the user is shown them: `abcd-efgh-ijkl-mnop`. */
export function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODE_COUNT }, () => {
    const characters = [...crypto.getRandomValues(new Uint8Array(LENGTH))].map((byte) => ALPHABET[byte % 32]);
    return characters.join("").match(/.{4}/g)!.join("-");
  });
}

/**
 * The stored form of a code as typed: case, spaces and dashes do not count. Null for text that is
 * no recovery code, which then matches nothing without a read.
 */
export async function recoveryCodeHash(userId: number, typed: string): Promise<string | null> {
  const code = typed.toLowerCase().replace(/[\s-]/g, "");
  if (code.length !== LENGTH || ![...code].every((character) => ALPHABET.includes(character))) return null;
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`recovery:${userId}:${code}`));
  return base64url.encode(new Uint8Array(digest));
}
