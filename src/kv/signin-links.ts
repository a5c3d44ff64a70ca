/**
 * Sign-in links (POST /api/2/signin, the login page's "e-mail me a link"): what a link stands for,
 * in KV under the keyed hash of its token (256 random bits), so the namespace never holds a usable
 * link. KV cannot be relied on for expiry (TTL at least 60 s) or for single use (eventually
 * consistent), so the record carries its expiry, checked in code, and D1's `signin_requests` row
 * decides which one link per address is live: replacing a link or spending it is one statement
 * there, strongly consistent, whatever KV still shows.
 */
import { base64url } from "jose";
import * as z from "zod/mini";
import type { Bindings } from "../env";
import { hashSecret } from "../security/data-protection";

/** Spec "Limits": a sign-in token expires after 5 minutes. */
export const SIGNIN_LINK_LIFETIME_SECONDS = 300;
/** Past the link's own expiry, so a late click reads as expired rather than unknown. */
const KV_TTL_SECONDS = SIGNIN_LINK_LIFETIME_SECONDS + 300;

const signInLinkSchema = z.object({
  /** Canonical address; the user (or the user to be) is whoever owns it when the link is used. */
  email: z.string(),
  clientId: z.string(),
  redirectUri: z.string(),
  remember: z.boolean(),
  context: z.nullable(z.string()),
  /** From an authorization request (the login page), passed on with the code. */
  state: z.optional(z.string()),
  codeChallenge: z.optional(z.string()),
  locale: z.string(),
  /** Unix seconds. */
  expires: z.number(),
});

export type SignInLink = z.infer<typeof signInLinkSchema>;

export async function storeSignInLink(env: Bindings, link: SignInLink): Promise<{ token: string; tokenHash: string }> {
  const token = base64url.encode(crypto.getRandomValues(new Uint8Array(32)));
  const tokenHash = await signInTokenHash(env, token);
  await env.CODES.put(linkKey(tokenHash), JSON.stringify(link), { expirationTtl: KV_TTL_SECONDS });
  return { token, tokenHash };
}

/** The link a token stands for, and the token's hash; null for an unknown token or a record of another shape. */
export async function findSignInLink(
  env: Bindings,
  token: string,
): Promise<{ link: SignInLink; tokenHash: string } | null> {
  const tokenHash = await signInTokenHash(env, token);
  const stored = await env.CODES.get(linkKey(tokenHash));
  let value: unknown = null;
  try {
    value = stored === null ? null : JSON.parse(stored);
  } catch {
    value = null;
  }
  const parsed = z.safeParse(signInLinkSchema, value);
  return parsed.success ? { link: parsed.data, tokenHash } : null;
}

function signInTokenHash(env: Bindings, token: string): Promise<string> {
  return hashSecret(env.DATA_PROTECTION_KEY, `signin:${token}`);
}

const linkKey = (tokenHash: string) => `signin:${tokenHash}`;
