/** `bytes` random bytes (256 bits unless said otherwise), base64url: codes, tokens, ids and secrets. */
import { base64url } from "jose";

export function randomToken(bytes = 32): string {
  return base64url.encode(crypto.getRandomValues(new Uint8Array(bytes)));
}

/** A new client id: 96 random bits in hex, as SPiD's ids are written. */
export function newClientId(): string {
  return [...crypto.getRandomValues(new Uint8Array(12))].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** A code of `digits` decimal digits for a person to type, uniform (no modulo bias). */
export function randomDigits(digits: number): string {
  const bound = 10 ** digits;
  // The largest multiple of `bound` below 2^32: values at or above it are drawn again.
  const limit = Math.floor(2 ** 32 / bound) * bound;
  for (;;) {
    const [value] = crypto.getRandomValues(new Uint32Array(1));
    if (value! < limit) return String(value! % bound).padStart(digits, "0");
  }
}
