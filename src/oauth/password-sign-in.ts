/**
 * A sign-in with e-mail and password, as the password grant and the login page both make it,
 * throttled against guessing (sign-in-throttle.ts; RFC 6749 §4.3.2 asks for protection against
 * brute force). A wrong password and an unknown address are one outcome, so a failure never tells
 * whether an address is registered. Every failure is recorded in the audit trail
 * (events/audit.ts), off the answer.
 */
import type { Context } from "hono";
import { base64url } from "jose";
import { findUserByEmail, type SignInUser } from "../db/queries/users";
import { REFUSED_USER_STATUSES } from "../db/schema";
import type { SignInOrigin } from "../durable-objects/rate-limiter-rpc";
import type { AppEnv } from "../env";
import { recordSignInFailure, type SignInClient } from "../events/audit";
import { emailLookupKey } from "../schemas/email-address";
import { verifyPassword } from "../security/password";
import { throttledCheck } from "./sign-in-throttle";

/** A failure names the account tried (null for an address that is nobody's), for the audit trail only. */
export type PasswordSignIn =
  | { outcome: "signed_in"; user: SignInUser }
  | { outcome: "wrong"; userId: number | null }
  | { outcome: "throttled"; retryAfter: number }
  /** The password was right, but the account may not sign in (inactive, blocked, deleted). */
  | { outcome: "refused"; refusal: string; userId: number };

/**
 * Checks `password` for the account `email` names, throttled as above. `caller` is whose network
 * the request comes from: the person's browser unless the token endpoint says it is the client's
 * server, so that any other caller gets the stricter figure.
 */
export async function signInWithPassword(
  c: Context<AppEnv>,
  client: SignInClient,
  email: string,
  password: string,
  now: number,
  caller: SignInOrigin["caller"] = "browser",
): Promise<PasswordSignIn> {
  const outcome = await checkPassword(c, client.id, email, password, caller);
  // A throttled attempt checked no password: it is not recorded, so that a flood of them writes nothing.
  if (outcome.outcome === "wrong") recordSignInFailure(c, client, outcome.userId, "wrong", now);
  if (outcome.outcome === "refused") recordSignInFailure(c, client, outcome.userId, outcome.refusal, now);
  return outcome;
}

async function checkPassword(
  c: Context<AppEnv>,
  clientId: string,
  email: string,
  password: string,
  caller: SignInOrigin["caller"],
): Promise<PasswordSignIn> {
  const user = await findUserByEmail(c.get("db")(), email);
  const account = user ? `user:${user.id}` : await unknownAccountKey(email);
  const checked = await throttledCheck(c, clientId, account, caller, async () =>
    verifyPassword(password, user?.passwordHash ?? null),
  );
  if (checked.outcome === "throttled") return checked;
  if (!user || checked.outcome === "failed") return { outcome: "wrong", userId: user?.id ?? null };
  const refusal = REFUSED_USER_STATUSES[user.status];
  return refusal ? { outcome: "refused", refusal, userId: user.id } : { outcome: "signed_in", user };
}

/**
 * Attempts are counted per user, whichever of their addresses is tried; a name that is no user's
 * is counted by a hash of it, so the limiter never holds an e-mail address.
 */
async function unknownAccountKey(username: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(emailLookupKey(username)));
  return `name:${base64url.encode(new Uint8Array(digest))}`;
}
