/**
 * Keys derived from the DATA_PROTECTION_KEY secret (HKDF-SHA256, one label per purpose):
 * - an HMAC-SHA256 key that hashes long random secrets (client secrets, refresh tokens). They carry
 *   enough entropy that a fast keyed hash is safe, and it keeps /oauth/token fast; without the key
 *   a leaked database does not even allow offline guessing.
 * - an AES-256-GCM key that seals client signing secrets, which must be recovered to sign responses.
 * Shared by the Worker and the Node import script.
 */
import { base64url, type CryptoKey } from "jose";
import { timingSafeEqual } from "./constant-time";

const encoder = new TextEncoder();
const keyCache = new Map<string, Promise<CryptoKey>>();

function derivedKey(secret: string, purpose: "secret-hash" | "secret-seal"): Promise<CryptoKey> {
  const cacheKey = `${purpose}:${secret}`;
  let key = keyCache.get(cacheKey);
  if (!key) {
    key = deriveKey(secret, purpose);
    keyCache.set(cacheKey, key);
  }
  return key;
}

async function deriveKey(secret: string, purpose: "secret-hash" | "secret-seal"): Promise<CryptoKey> {
  const material = base64url.decode(secret);
  if (material.length < 32) throw new Error("DATA_PROTECTION_KEY must be at least 32 bytes, base64url-encoded");
  const master = await crypto.subtle.importKey("raw", material, "HKDF", false, ["deriveKey"]);
  const params = { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: encoder.encode(purpose) };
  return purpose === "secret-hash"
    ? crypto.subtle.deriveKey(params, master, { name: "HMAC", hash: "SHA-256", length: 256 }, false, ["sign"])
    : crypto.subtle.deriveKey(params, master, { name: "AES-GCM", length: 256 }, false, ["encrypt", "decrypt"]);
}

/** HMAC-SHA256 of a high-entropy secret, base64url. */
export async function hashSecret(dataProtectionKey: string, value: string): Promise<string> {
  const key = await derivedKey(dataProtectionKey, "secret-hash");
  return base64url.encode(new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(value))));
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
