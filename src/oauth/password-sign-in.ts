/**
 * A sign-in with e-mail and password, as the password grant and the login page both make it.
 * Guessing is throttled per account and client (RFC 6749 §4.3.2 asks for protection against brute
 * force): the client's RateLimiter counts each attempt before the password is checked, and a right
 * password takes the count back. A wrong password and an unknown address are one outcome, so a
 * failure never tells whether an address is registered.
 */
import type { Context } from "hono";
import { base64url } from "jose";
import type { UserRecord } from "../db/queries/users";
import { findUserByEmail } from "../db/queries/users";
import { REFUSED_USER_STATUSES } from "../db/schema";
import { rateLimiterFor } from "../durable-objects/rate-limiter";
import type { AppEnv } from "../env";
import { emailLookupKey } from "../schemas/email-address";
import { verifyPassword } from "../security/password";

export type PasswordSignIn =
  | { outcome: "signed_in"; user: UserRecord }
  | { outcome: "wrong" }
  | { outcome: "throttled"; retryAfter: number }
  /** The password was right, but the account may not sign in (inactive, blocked, deleted). */
  | { outcome: "refused"; refusal: string };

export async function signInWithPassword(
  c: Context<AppEnv>,
  clientId: string,
  email: string,
  password: string,
): Promise<PasswordSignIn> {
  const user = await findUserByEmail(c.get("db")(), email);
  const limiter = rateLimiterFor(c.env, clientId, c.get("timing"));
  const account = user ? `user:${user.id}` : await unknownAccountKey(email);
  const attempt = await limiter.beginSignIn(account);
  if (!attempt.allowed) return { outcome: "throttled", retryAfter: attempt.retryAfter };
  const passwordMatches = await verifyPassword(password, user?.passwordHash ?? null);
  if (!user || !passwordMatches) return { outcome: "wrong" };
  await limiter.signInSucceeded(account);
  const refusal = REFUSED_USER_STATUSES[user.status];
  return refusal ? { outcome: "refused", refusal } : { outcome: "signed_in", user };
}

/**
 * Attempts are counted per user, whichever of their addresses is tried; a name that is no user's
 * is counted by a hash of it, so the limiter never holds an address.
 */
async function unknownAccountKey(username: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(emailLookupKey(username)));
  return `name:${base64url.encode(new Uint8Array(digest))}`;
}
