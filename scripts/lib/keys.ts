/** Fresh secrets for local development and tests (production keys are made the same way, once). */
import { base64url, calculateJwkThumbprint, exportJWK, generateKeyPair } from "jose";

/** A TOKEN_SIGNING_KEYS value: one Ed25519 private JWK, its kid the RFC 7638 thumbprint. */
export async function generateSigningKeys(): Promise<string> {
  const { privateKey } = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true });
  const jwk = await exportJWK(privateKey);
  const kid = await calculateJwkThumbprint(jwk);
  return JSON.stringify([{ ...jwk, alg: "EdDSA", kid }]);
}

/** A DATA_PROTECTION_KEY value: 32 random bytes, base64url. */
export function generateDataProtectionKey(): string {
  return base64url.encode(crypto.getRandomValues(new Uint8Array(32)));
}
