/**
 * A sign-in with e-mail and password, as the password grant and the login page both make it.
 * Guessing is throttled at the client (RFC 6749 §4.3.2 asks for protection against brute force)
 * by its RateLimiter, in one round trip before the password is checked, so before any hash is
 * computed: each account from one network is held for the window after a few failures; each
 * account from all networks is slowed by a wait of at most a minute, never locked, so that nobody
 * can lock its owner out, and the owner's own networks are not slowed at all; each network is
 * held after many failures for any accounts (spraying). The figures are beside the counters
 * (durable-objects/password-throttle.ts). The attempt is then settled there before the outcome is
 * told: a wrong password counts as a failure, a right one clears the account's; one that a
 * platform fault ends before then is abandoned and never counts. A wrong password and an unknown
 * address are one outcome, so a failure never tells whether an address is registered. Every
 * failure is recorded in the audit trail (events/audit.ts), off the answer.
 */
import type { Context } from "hono";
import { base64url } from "jose";
import type { UserRecord } from "../db/queries/users";
import { findUserByEmail } from "../db/queries/users";
import { REFUSED_USER_STATUSES } from "../db/schema";
import { SIGN_IN_FAILURE_LIMIT } from "../durable-objects/password-throttle";
import { rateLimiterFor } from "../durable-objects/rate-limiter";
import type { SignInOrigin } from "../durable-objects/rate-limiter-rpc";
import type { AppEnv } from "../env";
import { logUnlessPlatformFault } from "../errors";
import { recordSignInFailure, type SignInClient } from "../events/audit";
import { clientNetwork } from "../http/ip";
import { emailLookupKey } from "../schemas/email-address";
import { verifyPassword } from "../security/password";

/** A failure names the account tried (null for an address that is nobody's), for the audit trail only. */
export type PasswordSignIn =
  | { outcome: "signed_in"; user: UserRecord }
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
  const limiter = rateLimiterFor(c.env, clientId, c.get("timing"));
  const account = user ? `user:${user.id}` : await unknownAccountKey(email);
  const origin: SignInOrigin = { network: clientNetwork(c.req.raw), caller };
  const attempt = crypto.randomUUID();
  try {
    const begun = await limiter.beginSignIn(account, SIGN_IN_FAILURE_LIMIT, origin, attempt);
    if (!begun.allowed) return { outcome: "throttled", retryAfter: begun.retryAfter };
    const passwordMatches = await verifyPassword(password, user?.passwordHash ?? null);
    if (!user || !passwordMatches) {
      // Counted before it is told: a guess answered uncounted would be free.
      if (begun.pending) await limiter.signInFailed(attempt);
      return { outcome: "wrong", userId: user?.id ?? null };
    }
    await limiter.signInSucceeded(account, origin, attempt);
  } catch (error) {
    // Nothing was told: the attempt counts no more. In the background, so that a stalled object
    // costs the answer one deadline, not two; not abandoned, it lapses all the same.
    const abandon = rateLimiterFor(c.env, clientId)
      .signInAbandoned(attempt)
      .catch((failure: unknown) => logUnlessPlatformFault("sign-in attempt not abandoned", failure));
    c.executionCtx.waitUntil(abandon);
    throw error;
  }
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
