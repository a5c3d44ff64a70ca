/**
 * The `Idempotency-Key` header of the API's creates and rotations (docs/management.md "Retrying a
 * create"; the IETF draft "The Idempotency-Key HTTP Header Field"): a request retried with the same
 * key and the same request answers what the first made, instead of making it twice; the same key
 * with another request is refused. Keys are the calling client's, and answer for a day.
 */
import type { SQL } from "drizzle-orm";
import type { Context } from "hono";
import { base64url } from "jose";
import type { Database } from "../db/client";
import { findIdempotencyKey, recordIdempotencyKey } from "../db/queries/idempotency";
import type { AppEnv, Bindings } from "../env";
import { ApiError, ConfigurationError } from "../errors";
import { keyRing, openSecret, SealedUnderUnknownKey } from "../security/data-protection";
import { isJson } from "./media-type";
import type { Parameter } from "./openapi";
import { RESERVED_PARAMETERS } from "./reserved-parameters";

export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";

/** The header, as the OpenAPI document describes it on each endpoint that takes it. */
export const IDEMPOTENCY_KEY_PARAMETER: Parameter = {
  name: IDEMPOTENCY_KEY_HEADER,
  in: "header",
  description: "Makes a retry answer what the first attempt made (a day)",
  schema: { type: "string", maxLength: 255 },
};
/** Visible ASCII, as the draft's examples and Stripe's keys are; a UUID fits many times over. */
const KEY = /^[\x21-\x7e]{1,255}$/;
/** How long a key answers retries. */
export const IDEMPOTENCY_KEY_SECONDS = 24 * 3600;

/** A request's key, and what makes two requests with it the same one. */
export type Idempotency = { clientId: string; key: string; fingerprint: string };

/** The request's key, when it sent one (a malformed one is a 400, never ignored). */
export async function idempotencyOf(c: Context<AppEnv>, clientId: string): Promise<Idempotency | null> {
  const key = c.req.header(IDEMPOTENCY_KEY_HEADER);
  if (key === undefined) return null;
  if (!KEY.test(key)) {
    throw new ApiError(400, "invalid_request", `Invalid ${IDEMPOTENCY_KEY_HEADER}: 1 to 255 visible ASCII characters`);
  }
  return { clientId, key, fingerprint: await requestFingerprint(c) };
}

/**
 * Method, path and body: a form without the call's own parameters (a retry may carry a fresh
 * access token in the body), a JSON body as sent.
 */
async function requestFingerprint(c: Context<AppEnv>): Promise<string> {
  const sent = await c.req.text();
  let body = sent;
  if (!isJson(c.req.header("Content-Type"))) {
    const form = new URLSearchParams(sent);
    for (const name of RESERVED_PARAMETERS) form.delete(name);
    body = form.toString();
  }
  const text = `${c.req.method} ${c.req.path}\n${body}`;
  return base64url.encode(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text))));
}

/** What the key's first request made (its `resource`), if the key was used in the last day; another request's key is a 422. */
export async function earlierResource(db: Database, idempotency: Idempotency | null, now: number) {
  if (idempotency === null) return undefined;
  const found = await findIdempotencyKey(db, idempotency.clientId, idempotency.key);
  if (!found || found.created <= now - IDEMPOTENCY_KEY_SECONDS) return undefined;
  if (found.requestHash !== idempotency.fingerprint) {
    throw new ApiError(422, "invalid_request", `The ${IDEMPOTENCY_KEY_HEADER} was used with another request`);
  }
  return found.resource;
}

/**
 * The key's record, for the batch of what its request makes (none without a key): a request
 * racing another with the same key fails on it, and then answers what the other made.
 */
export function keyRecord(db: Database, idempotency: Idempotency | null, resource: string | SQL<string>, now: number) {
  if (idempotency === null) return [];
  const { clientId, key, fingerprint } = idempotency;
  const row = { clientId, key, requestHash: fingerprint, resource, created: now };
  return recordIdempotencyKey(db, row, now - IDEMPOTENCY_KEY_SECONDS);
}

/**
 * A secret an earlier request kept sealed for its replay. Sealed under a data-protection key since
 * retired (a rotation ended with `force`), it cannot be answered again: 409.
 */
export async function openKeptSecret(env: Bindings, sealed: string): Promise<string> {
  try {
    return await openSecret(keyRing(env), sealed);
  } catch (err) {
    if (err instanceof ConfigurationError && !(err instanceof SealedUnderUnknownKey)) throw err;
    throw new ApiError(
      409,
      "invalid_request",
      "What this Idempotency-Key made can no longer be answered: it was kept under a data-protection key since retired",
    );
  }
}
