/**
 * The `Idempotency-Key` header of the API's creates (docs/management.md "Retrying a create"; the
 * IETF draft "The Idempotency-Key HTTP Header Field"): a create retried with the same key and the
 * same request answers what the first made, instead of making it twice or refusing it as a
 * duplicate; the same key with another request is refused.
 */
import type { Context } from "hono";
import { base64url } from "jose";
import type { AppEnv } from "../env";
import { ApiError } from "../errors";

export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
/** Visible ASCII, as the draft's examples and Stripe's keys are; a UUID fits many times over. */
const KEY = /^[\x21-\x7e]{1,255}$/;

/** The request's key, when it sent one; a malformed one is a 400, never ignored. */
export function idempotencyKeyOf(c: Context<AppEnv>): string | undefined {
  const key = c.req.header(IDEMPOTENCY_KEY_HEADER);
  if (key === undefined) return undefined;
  if (!KEY.test(key)) {
    throw new ApiError(400, "invalid_request", `Invalid ${IDEMPOTENCY_KEY_HEADER}: 1 to 255 visible ASCII characters`);
  }
  return key;
}

/** What makes two requests the same one: method, path and body. */
export async function requestFingerprint(c: Context<AppEnv>): Promise<string> {
  const text = `${c.req.method} ${c.req.path}\n${await c.req.text()}`;
  return base64url.encode(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text))));
}

export function keyReusedError(): ApiError {
  return new ApiError(422, "invalid_request", `The ${IDEMPOTENCY_KEY_HEADER} was used with another request`);
}
