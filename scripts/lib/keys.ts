/** Fresh secrets for local development and tests (production keys are made the same way, once). */
import { base64url, calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from "jose";

/**
 * A TOKEN_SIGNING_KEYS value: an Ed25519 private JWK (access tokens) and a 2048-bit RSA one (ID
 * tokens, RS256), each with its RFC 7638 thumbprint as kid.
 */
export async function generateSigningKeys(): Promise<string> {
  return JSON.stringify([await generateSigningKey("EdDSA"), await generateSigningKey("RS256")]);
}

/** One private JWK of the algorithm, for adding to a ring (rotation, or an older ring's missing RSA key). */
export async function generateSigningKey(alg: "EdDSA" | "RS256"): Promise<JWK> {
  const { privateKey } =
    alg === "EdDSA"
      ? await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true })
      : await generateKeyPair("RS256", { modulusLength: 2048, extractable: true });
  const jwk = await exportJWK(privateKey);
  return { ...jwk, alg, kid: await calculateJwkThumbprint(jwk) };
}

/** A DATA_PROTECTION_KEY value: 32 random bytes, base64url. */
export function generateDataProtectionKey(): string {
  return base64url.encode(crypto.getRandomValues(new Uint8Array(32)));
}
