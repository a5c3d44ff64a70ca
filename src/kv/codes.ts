/**
 * Exchange codes in KV (`CODES`); the key layout is in docs/storage.md. A code is 256 random bits,
 * base64url, stored only under its keyed hash, so the namespace never holds a usable code.
 *
 * KV is eventually consistent and its TTL cannot go below 60 s, so neither expiry nor single use
 * rests on it: the record carries its own expiry, checked in code, and a redemption is recorded
 * in the target client's RateLimiter (strongly consistent), which refuses a second one even where
 * KV still shows the code. The TTL only cleans up.
 */
import { base64url } from "jose";
import * as z from "zod/mini";
import type { Context } from "hono";
import { redeem } from "../durable-objects/one-time-values";
import { rateLimiterFor } from "../durable-objects/rate-limiter";
import type { AppEnv, Bindings, RequestTiming } from "../env";
import { timingSafeEqual } from "../security/constant-time";
import { hashSecret, keyRing } from "../security/data-protection";
import { randomToken } from "../security/random-token";
import { requestedClaimsSchema, SIGN_IN_METHODS } from "../schemas/requested-claims";
import { readRecord } from "./records";

/** Spec "Limits": an exchange code expires 30 seconds after creation. */
export const EXCHANGE_CODE_LIFETIME_MS = 30_000;
/** KV's shortest expirationTtl. */
const KV_MIN_TTL_SECONDS = 60;
const CODE_BYTES = 32;

/** What a code stands for: `userId`, handed by `issuingClientId` to `clientId`, for `redirectUri`. */
const exchangeCodeRecordSchema = z.object({
  type: z.enum(["code", "session"]),
  userId: z.number(),
  issuingClientId: z.string(),
  clientId: z.string(),
  redirectUri: z.string(),
  /** PKCE (RFC 7636): the S256 challenge of an authorization request, for its code. */
  codeChallenge: z.optional(z.string()),
  /** An authorization request's granted scope and OpenID Connect sign-in, for its code. */
  scope: z.optional(z.string()),
  nonce: z.optional(z.string()),
  signIn: z.optional(
    z.object({
      authTime: z.number(),
      sid: z.nullable(z.string()),
      method: z.nullable(z.enum(SIGN_IN_METHODS)),
    }),
  ),
  claims: z.optional(requestedClaimsSchema),
  /** Unix milliseconds. */
  expiresAt: z.number(),
});

export type ExchangeCodeRecord = z.infer<typeof exchangeCodeRecordSchema>;
export type ExchangeType = ExchangeCodeRecord["type"];

export async function createExchangeCode(
  env: Bindings,
  binding: Omit<ExchangeCodeRecord, "expiresAt">,
  nowMs: number,
): Promise<string> {
  const code = randomToken(CODE_BYTES);
  const record: ExchangeCodeRecord = { ...binding, expiresAt: nowMs + EXCHANGE_CODE_LIFETIME_MS };
  const key = await exchangeKey(env.DATA_PROTECTION_KEY, code);
  await env.CODES.put(key, JSON.stringify(record), { expirationTtl: KV_MIN_TTL_SECONDS });
  return code;
}

/**
 * The code's key (which also names its redemption) and its record; null for an unknown or expired
 * code, and for a value that is not a record of this shape (read as unknown, never trusted).
 */
async function findExchangeCode(
  env: Bindings,
  code: string,
): Promise<{ key: string; record: ExchangeCodeRecord | null }> {
  const ring = keyRing(env);
  const key = await exchangeKey(ring.current, code);
  const record = await readRecord(env.CODES, key, exchangeCodeRecordSchema);
  if (record !== null || !ring.previous) return { key, record };
  // A code issued just before a key rotation's switch, under the previous key.
  const previous = await exchangeKey(ring.previous, code);
  return { key: previous, record: await readRecord(env.CODES, previous, exchangeCodeRecordSchema) };
}

/**
 * The record of a live, unspent code of `type`, read without spending it (for a page that asks
 * first); null for any other, which spending would refuse anyway.
 */
export async function peekExchangeCode(
  env: Bindings,
  code: string,
  type: ExchangeType,
  timing?: RequestTiming,
): Promise<ExchangeCodeRecord | null> {
  const { key, record } = await findExchangeCode(env, code);
  if (record?.type !== type || Date.now() >= record.expiresAt) return null;
  return (await rateLimiterFor(env, record.clientId, timing).redeemed(key)) ? null : record;
}

/**
 * What spending a code came to: `spent` with what its redemption started. `replayed` carries the
 * grant its first redemption started; it and `expired` carry the code's record (its client and
 * redirect URI: the way back from the page that says so).
 */
export type SpentCode<T> =
  | { outcome: "spent"; record: ExchangeCodeRecord; started: T }
  | { outcome: "invalid" | "redirect_mismatch" | "verifier_mismatch" }
  | { outcome: "expired"; record: ExchangeCodeRecord }
  | { outcome: "replayed"; grant: string | null; record: ExchangeCodeRecord };

/**
 * Spends a code of `want.type` (for `want.clientId` and `want.redirectUri` when given) by `start`,
 * which writes what it starts (`grant`: a refresh-token family, a session): checks made here
 * first, then the single redemption in the target client's RateLimiter, reserved while `start`
 * writes and spent once it has (durable-objects/one-time-values.ts). Another
 * client's code, a webview code at the token endpoint or the reverse are `invalid` and are not
 * spent; nor is a code whose PKCE challenge `want.codeVerifier` does not meet, one without a
 * challenge presented with a verifier (RFC 9700 §2.1.1: no downgrade), or one without a challenge
 * when `want.challengeRequired`. A spent code stays in KV until its TTL: its redemption record
 * refuses it, and finding it lets a replay be told from an unknown code, so that what the first
 * redemption got is revoked.
 */
export async function spendExchangeCode<T>(
  c: Context<AppEnv>,
  code: string,
  want: {
    type: ExchangeType;
    clientId?: string;
    redirectUri?: string;
    codeVerifier?: string | undefined;
    /** A public client's code must have a challenge: nothing else binds it to the client. */
    challengeRequired?: boolean;
  },
  grant: string,
  start: (record: ExchangeCodeRecord) => Promise<T>,
): Promise<SpentCode<T>> {
  const { key, record } = await findExchangeCode(c.env, code);
  if (!record || record.type !== want.type || (want.clientId !== undefined && record.clientId !== want.clientId)) {
    return { outcome: "invalid" };
  }
  if (want.redirectUri !== undefined && want.redirectUri !== record.redirectUri) {
    return { outcome: "redirect_mismatch" };
  }
  if (want.challengeRequired && record.codeChallenge === undefined) return { outcome: "verifier_mismatch" };
  if (!(await meetsChallenge(record.codeChallenge, want.codeVerifier))) return { outcome: "verifier_mismatch" };
  const redeemed = await redeem(c, record.clientId, { key, expiresAt: record.expiresAt, grant, reserve: true }, () =>
    start(record),
  );
  switch (redeemed.outcome) {
    case "redeemed":
      return { outcome: "spent", record, started: redeemed.started };
    case "replayed":
    case "expired":
      return { ...redeemed, record };
  }
}

/** PKCE S256 (RFC 7636 §4.6): base64url(SHA-256(verifier)) is the challenge. */
export async function s256Challenge(verifier: string): Promise<string> {
  return base64url.encode(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))));
}

/** RFC 7636 §4.1: 43 to 128 unreserved characters. */
const CODE_VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

async function meetsChallenge(challenge: string | undefined, verifier: string | undefined): Promise<boolean> {
  if (challenge === undefined) return verifier === undefined;
  if (verifier === undefined || !CODE_VERIFIER.test(verifier)) return false;
  return timingSafeEqual(await s256Challenge(verifier), challenge);
}

async function exchangeKey(dataProtectionKey: string, code: string): Promise<string> {
  return `exchange:${await hashSecret(dataProtectionKey, code)}`;
}
