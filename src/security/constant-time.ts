const encoder = new TextEncoder();

/**
 * Compares two byte strings in time that depends only on their length, so that a caller cannot
 * learn how much of a secret it guessed right. Only ever used on fixed-length digests, so an early
 * return on a length mismatch reveals nothing.
 */
export function timingSafeEqual(a: Uint8Array | string, b: Uint8Array | string): boolean {
  const x = typeof a === "string" ? encoder.encode(a) : a;
  const y = typeof b === "string" ? encoder.encode(b) : b;
  if (x.length !== y.length) return false;
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x[i]! ^ y[i]!;
  return diff === 0;
}

/**
 * Compares a presented value with a secret of any length in time that depends only on the
 * presented value's length (which its sender knows), so neither the secret's content nor its
 * length leaks.
 */
export function matchesSecret(presented: string, secret: string): boolean {
  const x = encoder.encode(presented);
  const y = encoder.encode(secret);
  let diff = x.length ^ y.length;
  for (let i = 0; i < x.length; i++) diff |= x[i]! ^ (y[i % y.length] ?? 0);
  return diff === 0;
}
