/** `bytes` random bytes (256 bits unless said otherwise), base64url: codes, tokens, ids and secrets. */
import { base64url } from "jose";

export function randomToken(bytes = 32): string {
  return base64url.encode(crypto.getRandomValues(new Uint8Array(bytes)));
}
