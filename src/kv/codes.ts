/**
 * Exchange codes in KV (`CODES`); the key layout is in docs/storage.md. A code is 256 random bits,
 * base64url, stored only under its keyed hash, so the namespace never holds a usable code.
 *
 * KV is eventually consistent and its TTL cannot go below 60 s, so neither expiry nor single use
 * rests on it: the record carries its own expiry, checked in code, and a redemption is recorded
 * in the redeeming client's RateLimiter (strongly consistent), which refuses a second one even
 * where KV still shows the code. The TTL only cleans up.
 */
import { base64url } from "jose";
import * as z from "zod/mini";
import type { Bindings } from "../env";
import { hashSecret } from "../security/data-protection";

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
  /** Unix milliseconds. */
  expiresAt: z.number(),
});

export type ExchangeCodeRecord = z.infer<typeof exchangeCodeRecordSchema>;

export async function createExchangeCode(
  env: Bindings,
  binding: Omit<ExchangeCodeRecord, "expiresAt">,
  nowMs: number,
): Promise<string> {
  const code = base64url.encode(crypto.getRandomValues(new Uint8Array(CODE_BYTES)));
  const record: ExchangeCodeRecord = { ...binding, expiresAt: nowMs + EXCHANGE_CODE_LIFETIME_MS };
  await env.CODES.put(await exchangeKey(env, code), JSON.stringify(record), { expirationTtl: KV_MIN_TTL_SECONDS });
  return code;
}

/**
 * The code's key (which also names its redemption) and its record; null for an unknown or deleted
 * code, and for a value that is not a record of this shape (read as unknown, never trusted).
 */
export async function findExchangeCode(
  env: Bindings,
  code: string,
): Promise<{ key: string; record: ExchangeCodeRecord | null }> {
  const key = await exchangeKey(env, code);
  const stored = await env.CODES.get(key);
  let value: unknown;
  try {
    value = stored === null ? null : JSON.parse(stored);
  } catch {
    value = null;
  }
  const parsed = z.safeParse(exchangeCodeRecordSchema, value);
  return { key, record: parsed.success ? parsed.data : null };
}

/** A redeemed code is deleted; its redemption record, not this, is what refuses it again. */
export function deleteExchangeCode(env: Bindings, key: string): Promise<void> {
  return env.CODES.delete(key);
}

async function exchangeKey(env: Bindings, code: string): Promise<string> {
  return `exchange:${await hashSecret(env.DATA_PROTECTION_KEY, code)}`;
}
