/**
 * Keys derived from the DATA_PROTECTION_KEY secret (HKDF-SHA256, one label per purpose):
 * - an HMAC-SHA256 key that hashes long random secrets (client secrets, refresh tokens). They carry
 *   enough entropy that a fast keyed hash is safe, and it keeps /oauth/token fast; without the key
 *   a leaked database does not even allow offline guessing.
 * - an AES-256-GCM key that seals client signing secrets, which must be recovered to sign responses.
 * - an HMAC-SHA256 key for the key's fingerprint alone (`keyFingerprint`).
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

/** Why `secret` cannot be the data-protection key, or null when it can; never quotes it. */
export function dataProtectionKeyProblem(secret: string | undefined): string | null {
  if (!secret) return "DATA_PROTECTION_KEY is not set";
  let material: Uint8Array;
  try {
    material = base64url.decode(secret);
  } catch {
    material = new Uint8Array(0);
  }
  return material.length < MIN_KEY_BYTES
    ? `DATA_PROTECTION_KEY must be at least ${MIN_KEY_BYTES} bytes, base64url-encoded`
    : null;
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

/** Checks a presented secret against its stored hash in constant time. */
export async function verifySecret(dataProtectionKey: string, value: string, storedHash: string): Promise<boolean> {
  return timingSafeEqual(await hashSecret(dataProtectionKey, value), storedHash);
}

/** AES-256-GCM with a random 96-bit nonce: `<nonce>.<ciphertext>` in base64url. */
export async function sealSecret(dataProtectionKey: string, value: string): Promise<string> {
  const key = await derivedKey(dataProtectionKey, "secret-seal");
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt({ name: "AES-GCM", iv }, key, encoder.encode(value));
  return `${base64url.encode(iv)}.${base64url.encode(new Uint8Array(sealed))}`;
}

/** Recovers a sealed secret; throws when it was tampered with or sealed under another key. */
export async function openSecret(dataProtectionKey: string, sealed: string): Promise<string> {
  const [iv, data] = sealed.split(".");
  if (!iv || !data) throw new Error("malformed sealed secret");
  const key = await derivedKey(dataProtectionKey, "secret-seal");
  const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: base64url.decode(iv) }, key, base64url.decode(data));
  return new TextDecoder().decode(plain);
}
