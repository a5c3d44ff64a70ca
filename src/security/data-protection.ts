/**
 * Keys derived from the DATA_PROTECTION_KEY secret (HKDF-SHA256, one label per purpose):
 * - an HMAC-SHA256 key that hashes long random secrets (client secrets, refresh tokens). They carry
 *   enough entropy that a fast keyed hash is safe, and it keeps /oauth/token fast; without the key
 *   a leaked database does not even allow offline guessing.
 * - an AES-256-GCM key that seals client signing secrets, which must be recovered to sign responses.
 * - an HMAC-SHA256 key for the key's fingerprint alone (`keyFingerprint`).
 *
 * The key can be rotated (docs/operations.md "Rotating the data-protection key"): a KeyRing holds
 * the current key, which protects everything written, and during a rotation the previous one, which
 * only reads. A value stored in D1 names the key it is under, `<key id>.<hash>` and
 * `<key id>.<nonce>.<ciphertext>`; a value written before rotation existed is bare, under the
 * database's first key, which while it still protects anything is the ring's oldest.
 * Shared by the Worker and the Node import script.
 */
import { base64url, type CryptoKey } from "jose";
import { ConfigurationError } from "../errors";
import { timingSafeEqual } from "./constant-time";

type Purpose = "secret-hash" | "secret-seal" | "key-fingerprint";

const encoder = new TextEncoder();
const keyCache = new Map<string, Promise<CryptoKey>>();
/** Keys this isolate must not use (src/configuration.ts): every use fails with the error kept here. */
const refusedKeys = new Map<string, ConfigurationError>();

/** What the fingerprint is the HMAC of: any fixed text would do, but it must never change. */
const FINGERPRINT_LABEL = "DATA_PROTECTION_KEY fingerprint";
const MIN_KEY_BYTES = 32;
/** A key's id: the start of its fingerprint, 48 bits, so that two keys of one ring never share one. */
const KEY_ID_LENGTH = 8;
const keyIds = new Map<string, Promise<string>>();

/**
 * The keys data is protected under: `current` protects what is written; `previous` only reads, and
 * only during a rotation the database records, which started at `since` (Unix seconds).
 */
export type KeyRing = { current: string; previous?: string; since?: number };

/**
 * The previous keys this isolate reads with, by the env's pair of keys, with their rotation's
 * start: only while the database records that rotation (src/configuration.ts says so, and unsays
 * it when the rotation ends), so a previous key left set, or set without a rotation, reads nothing.
 */
const readingPreviousKeys = new Map<string, { since: number; checkedAt: number }>();
/** A previous key whose rotation could not be confirmed for this long reads nothing (D1 failing meanwhile). */
const PREVIOUS_KEY_CONFIRMED_FOR_MS = 5 * 60_000;

/**
 * How long after a rotation's switch isolates of the version before it, on the previous key alone,
 * may still serve: values are moved to the new key (re-sealed, hashed again) only after it, so
 * that those isolates can still read them meanwhile.
 */
export const SWITCH_MARGIN_SECONDS = 600;

/** Whether values may be moved from the ring's previous key to its current one by `now`. */
export const movesToCurrentKey = (ring: KeyRing, now: number) =>
  ring.since !== undefined && now >= ring.since + SWITCH_MARGIN_SECONDS;
const pairOf = (current: string, previous: string) => `${current} ${previous}`;

export function acceptPreviousKey(current: string, previous: string, since: number | null): void {
  if (since === null) readingPreviousKeys.delete(pairOf(current, previous));
  else readingPreviousKeys.set(pairOf(current, previous), { since, checkedAt: Date.now() });
}

export function keyRing(env: { DATA_PROTECTION_KEY: string; DATA_PROTECTION_KEY_PREVIOUS?: string }): KeyRing {
  const { DATA_PROTECTION_KEY: current, DATA_PROTECTION_KEY_PREVIOUS: previous } = env;
  const accepted = previous ? readingPreviousKeys.get(pairOf(current, previous)) : undefined;
  return accepted === undefined || Date.now() - accepted.checkedAt > PREVIOUS_KEY_CONFIRMED_FOR_MS
    ? { current }
    : { current, previous, since: accepted.since };
}

/** A secret sealed under a key this deployment does not read: a 503 as any key problem, never a 500. */
export class SealedUnderUnknownKey extends ConfigurationError {
  constructor() {
    super("a secret is sealed under a DATA_PROTECTION_KEY this deployment does not read");
  }
}

/** The ring's keys, the previous first: the order bare values are tried in, oldest first. */
const keysOf = (ring: KeyRing): string[] => (ring.previous ? [ring.previous, ring.current] : [ring.current]);

/** The id a stored value names its key by. */
export function keyId(secret: string): Promise<string> {
  let id = keyIds.get(secret);
  if (!id) {
    id = keyFingerprint(secret).then((fingerprint) => fingerprint.slice(0, KEY_ID_LENGTH));
    keyIds.set(secret, id);
    id.catch(() => keyIds.delete(secret));
  }
  return id;
}

/** Whether a stored value (`<key id>.<…>`) is under a key of the ring: one this deployment reads. */
export async function underRingKey(ring: KeyRing, stored: string): Promise<boolean> {
  return (await keyById(ring, stored.slice(0, stored.indexOf(".")))) !== undefined;
}

/** The ring's key whose id is `id`, if any. */
async function keyById(ring: KeyRing, id: string): Promise<string | undefined> {
  for (const key of keysOf(ring)) if ((await keyId(key)) === id) return key;
  return undefined;
}

/** Why `secret` cannot be the data-protection key (or `name`), or null when it can; never quotes it. */
export function dataProtectionKeyProblem(secret: string | undefined, name = "DATA_PROTECTION_KEY"): string | null {
  if (!secret) return `${name} is not set`;
  let material: Uint8Array;
  try {
    material = base64url.decode(secret);
  } catch {
    material = new Uint8Array(0);
  }
  return material.length < MIN_KEY_BYTES ? `${name} must be at least ${MIN_KEY_BYTES} bytes, base64url-encoded` : null;
}

/**
 * Makes every use of `secret` in this isolate fail with `problem` (a 503): for a well-formed key
 * that is not the one the database's data is protected under, whose hashes would never match.
 */
export function refuseDataProtectionKey(secret: string, problem: string): void {
  refusedKeys.set(secret, new ConfigurationError(problem));
}

function derivedKey(secret: string, purpose: Purpose): Promise<CryptoKey> {
  const refused = refusedKeys.get(secret);
  if (refused) return Promise.reject(refused);
  const cacheKey = `${purpose}:${secret}`;
  let key = keyCache.get(cacheKey);
  if (!key) {
    key = deriveKey(secret, purpose);
    keyCache.set(cacheKey, key);
  }
  return key;
}

async function deriveKey(secret: string, purpose: Purpose): Promise<CryptoKey> {
  const problem = dataProtectionKeyProblem(secret);
  if (problem) throw new ConfigurationError(problem);
  const master = await crypto.subtle.importKey("raw", base64url.decode(secret), "HKDF", false, ["deriveKey"]);
  const params = { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: encoder.encode(purpose) };
  return purpose === "secret-seal"
    ? crypto.subtle.deriveKey(params, master, { name: "AES-GCM", length: 256 }, false, ["encrypt", "decrypt"])
    : crypto.subtle.deriveKey(params, master, { name: "HMAC", hash: "SHA-256", length: 256 }, false, ["sign"]);
}

async function hmac(secret: string, purpose: "secret-hash" | "key-fingerprint", value: string): Promise<string> {
  const key = await derivedKey(secret, purpose);
  return base64url.encode(new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(value))));
}

/** HMAC-SHA256 of a high-entropy secret, base64url. */
export function hashSecret(dataProtectionKey: string, value: string): Promise<string> {
  return hmac(dataProtectionKey, "secret-hash", value);
}

/**
 * The key's fingerprint, kept in D1 (table key_fingerprints) so that data protected under one key
 * is never mixed with another's: an HMAC of a fixed label under a key derived for this alone, so
 * it tells nothing of the key or of the keys derived for the other purposes.
 */
export function keyFingerprint(dataProtectionKey: string): Promise<string> {
  return hmac(dataProtectionKey, "key-fingerprint", FINGERPRINT_LABEL);
}

/** A secret's keyed hash as D1 stores it, under the ring's current key: `<key id>.<hash>`. */
export async function protectSecret(ring: KeyRing, value: string): Promise<string> {
  return `${await keyId(ring.current)}.${await hashSecret(ring.current, value)}`;
}

/**
 * Every form `value` may be stored in under the ring, to look a presented secret up by: tagged
 * under each key, and bare under the oldest (a value of before key ids).
 */
export async function protectedForms(ring: KeyRing, value: string): Promise<string[]> {
  const [oldest, ...newer] = keysOf(ring);
  const bare = await hashSecret(oldest!, value);
  const tagged = await Promise.all(newer.map(async (key) => `${await keyId(key)}.${await hashSecret(key, value)}`));
  return [...tagged, `${await keyId(oldest!)}.${bare}`, bare];
}

/** Under which of the ring's keys a stored value is: by its tag, or for a bare one the oldest. */
export async function keyOfProtected(ring: KeyRing, stored: string): Promise<string> {
  const parts = stored.split(".");
  const tagged = parts.length === 3 || (parts.length === 2 && parts[0]!.length === KEY_ID_LENGTH);
  return (tagged ? await keyById(ring, parts[0]!) : ring.previous) ?? ring.current;
}

/**
 * Checks a presented secret against its stored hash in constant time: `current` when it matches
 * under the current key, `previous` under the previous one (to re-hash it then), else null.
 */
export async function verifySecret(
  ring: KeyRing,
  value: string,
  stored: string,
): Promise<"current" | "previous" | null> {
  if (stored === "") {
    // An unknown client's: the cost of a known one's.
    await hashSecret(ring.current, value);
    return null;
  }
  const dot = stored.indexOf(".");
  const key = dot === KEY_ID_LENGTH ? await keyById(ring, stored.slice(0, dot)) : undefined;
  const candidates = dot === -1 ? keysOf(ring) : key === undefined ? [] : [key];
  for (const candidate of candidates) {
    const hash = await hashSecret(candidate, value);
    if (timingSafeEqual(dot === -1 ? hash : `${stored.slice(0, dot)}.${hash}`, stored)) {
      return candidate === ring.current ? "current" : "previous";
    }
  }
  if (candidates.length === 0) await hashSecret(ring.current, value); // the cost of a known key
  return null;
}

/** Whether `presented` is `value`'s keyed hash under one of the ring's keys (a form's or a cookie's). */
export async function macMatches(ring: KeyRing, value: string, presented: string): Promise<boolean> {
  for (const key of [ring.current, ...(ring.previous ? [ring.previous] : [])]) {
    if (timingSafeEqual(await hashSecret(key, value), presented)) return true;
  }
  return false;
}

/** AES-256-GCM with a random 96-bit nonce under the current key: `<key id>.<nonce>.<ciphertext>`, base64url. */
export async function sealSecret(ring: KeyRing, value: string): Promise<string> {
  const key = await derivedKey(ring.current, "secret-seal");
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt({ name: "AES-GCM", iv }, key, encoder.encode(value));
  return `${await keyId(ring.current)}.${base64url.encode(iv)}.${base64url.encode(new Uint8Array(sealed))}`;
}

/** Recovers a sealed secret; throws when it was tampered with or sealed under a key not in the ring. */
export async function openSecret(ring: KeyRing, sealed: string): Promise<string> {
  const parts = sealed.split(".");
  const [iv, data] = parts.slice(-2);
  if (!iv || !data || parts.length > 3) throw new Error("malformed sealed secret");
  const tagged = parts.length === 3 ? await keyById(ring, parts[0]!) : undefined;
  if (parts.length === 3 && tagged === undefined) throw new SealedUnderUnknownKey();
  let failure: unknown;
  for (const secret of tagged === undefined ? keysOf(ring) : [tagged]) {
    try {
      const key = await derivedKey(secret, "secret-seal");
      const nonce = base64url.decode(iv);
      const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: nonce }, key, base64url.decode(data));
      return new TextDecoder().decode(plain);
    } catch (err) {
      failure = err;
    }
  }
  throw failure;
}
