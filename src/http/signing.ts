/**
 * Signed responses (spec "Response signing"). Any /api/2 call with a token may add `signed=1`:
 * the container then carries `data` as Base64 URL encoded JSON, `algorithm` HMAC-SHA256 and `sig`,
 * the HMAC of that `data` string under the calling client's signing secret, Base64 URL encoded.
 * The signature covers `data` only, as the spec's verification steps do; the rest of the container
 * (rate-limit figures, debug) is not signed. docs/verify-signed-response.ts is the check a client
 * can copy.
 */
import { base64url } from "jose";
import { ApiError } from "../errors";

export const SIGNED_PARAMETER = "signed";
export const SIGNATURE_ALGORITHM = "HMAC-SHA256";

export type SignedData = { data: string; algorithm: typeof SIGNATURE_ALGORITHM; sig: string };

/** Whether the request asks for a signed response: `signed=1` (or `true`); `0`, `false` or absent do not. */
export function signingRequested(url: URL): boolean {
  const values = url.searchParams.getAll(SIGNED_PARAMETER);
  if (values.length === 0) return false;
  const [value] = values;
  if (values.length > 1 || !["1", "true", "0", "false"].includes(value!)) {
    throw new ApiError(400, "invalid_request", `Invalid parameter value: ${SIGNED_PARAMETER}`);
  }
  return value === "1" || value === "true";
}

/** The HMAC key of a client's signing secret (its UTF-8 bytes, as clients use it). */
export function signingKey(secret: string): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
}

/** The signed container members for `data`, given as its JSON text. */
export async function signData(key: CryptoKey, dataJson: string): Promise<SignedData> {
  const data = base64url.encode(dataJson);
  const sig = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(data)));
  return { data, algorithm: SIGNATURE_ALGORITHM, sig: base64url.encode(sig) };
}
