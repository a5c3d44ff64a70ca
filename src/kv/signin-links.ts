/**
 * Sign-in links (POST /api/2/signin, the login page's "e-mail me a link"): what a link stands for,
 * in KV under the keyed hash of its token (256 random bits), so the namespace never holds a usable
 * link. KV cannot be relied on for expiry (TTL at least 60 s) or for single use (eventually
 * consistent), so the record carries its expiry, checked in code, and D1's `signin_requests` row
 * decides which one link per user is live: replacing a link or spending it is one statement
 * there, strongly consistent, whatever KV still shows.
 */
import * as z from "zod/mini";
import { signUpProfileSchema } from "../schemas/sign-up";
import type { Bindings } from "../env";
import { hashSecret, keyRing } from "../security/data-protection";
import { randomToken } from "../security/random-token";
import { readRecord } from "./records";

/** Spec "Limits": a sign-in token expires after 5 minutes. */
export const SIGNIN_LINK_LIFETIME_SECONDS = 300;
/** Past the link's own expiry, so a late click reads as expired rather than unknown. */
const KV_TTL_SECONDS = SIGNIN_LINK_LIFETIME_SECONDS + 300;

const signInLinkSchema = z.object({
  /** Whom the link signs in (oauth/signin-links.ts linkSubject): its row in D1's `signin_requests`. */
  subject: z.string(),
  /** Canonical address the link was mailed to, and proves when used. */
  email: z.string(),
  clientId: z.string(),
  redirectUri: z.string(),
  remember: z.boolean(),
  context: z.nullable(z.string()),
  /**
   * The authorization request the link finishes when used (its consent, state and PKCE challenge):
   * the login page's as it carried it, or the one made for a link of POST /api/2/signin.
   */
  authorization: z.record(z.string(), z.string()),
  locale: z.string(),
  /** Unix seconds. */
  expires: z.number(),
  /**
   * `email`: the link confirms the address as its user's new primary one (an address change made
   * through the API), which it may while the address is the user's, unverified.
   */
  confirms: z.optional(z.literal("email")),
  /** `password`: the link's page sets a new password first, and signs the user out everywhere else. */
  resets: z.optional(z.literal("password")),
  /** The sign-up view's profile: the account the link makes starts with it. */
  profile: z.optional(signUpProfileSchema),
});

export type SignInLink = z.infer<typeof signInLinkSchema>;

/** A new link's token (256 random bits) and the keyed hash it is stored and recorded under. */
export async function newSignInToken(env: Bindings): Promise<{ token: string; tokenHash: string }> {
  const token = randomToken();
  return { token, tokenHash: await signInTokenHash(env.DATA_PROTECTION_KEY, token) };
}

export async function storeSignInLink(env: Bindings, tokenHash: string, link: SignInLink): Promise<void> {
  await env.CODES.put(linkKey(tokenHash), JSON.stringify(link), { expirationTtl: KV_TTL_SECONDS });
}

/** The link a token stands for, and the token's hash; null for an unknown token or a record of another shape. */
export async function findSignInLink(
  env: Bindings,
  token: string,
): Promise<{ link: SignInLink; tokenHash: string } | null> {
  const ring = keyRing(env);
  // A link mailed just before a key rotation's switch is under the previous key.
  for (const key of ring.previous ? [ring.current, ring.previous] : [ring.current]) {
    const tokenHash = await signInTokenHash(key, token);
    const link = await readRecord(env.CODES, linkKey(tokenHash), signInLinkSchema);
    if (link !== null) return { link, tokenHash };
  }
  return null;
}

function signInTokenHash(dataProtectionKey: string, token: string): Promise<string> {
  return hashSecret(dataProtectionKey, `signin:${token}`);
}

const linkKey = (tokenHash: string) => `signin:${tokenHash}`;
