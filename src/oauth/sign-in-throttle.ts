/**
 * Guessing at a sign-in's secrets (a password, a second factor's code) is throttled at the client
 * by its RateLimiter, in one round trip before the secret is checked, so before any hash is
 * computed: each account from one network is held for the window after a few failures; each
 * account from all networks is slowed by a wait of at most a minute, never locked, so that nobody
 * can lock its owner out, and the owner's own networks are not slowed at all; each network is held
 * after many failures for any accounts (spraying). The figures are beside the counters
 * (durable-objects/password-throttle.ts). The attempt is then settled there before the outcome is
 * told: a failure counts, a success clears the account's failures; one that a platform fault ends
 * before then is abandoned and never counts.
 */
import type { Context } from "hono";
import { SIGN_IN_FAILURE_LIMIT } from "../durable-objects/password-throttle";
import { rateLimiterFor } from "../durable-objects/rate-limiter";
import type { SignInOrigin } from "../durable-objects/rate-limiter-rpc";
import type { AppEnv } from "../env";
import { logUnlessPlatformFault } from "../errors";
import { clientNetwork } from "../http/ip";

export type ThrottledCheck = { outcome: "passed" | "failed" } | { outcome: "throttled"; retryAfter: number };

/**
 * Runs `check` (whether the secret presented is right) for `account` at `clientId`, throttled as
 * above. `caller` is whose network the request comes from: the person's browser unless the token
 * endpoint says it is the client's server, so that any other caller gets the stricter figure.
 */
export async function throttledCheck(
  c: Context<AppEnv>,
  clientId: string,
  account: string,
  caller: SignInOrigin["caller"],
  check: () => Promise<boolean>,
): Promise<ThrottledCheck> {
  const limiter = rateLimiterFor(c.env, clientId, c.get("timing"));
  const origin: SignInOrigin = { network: clientNetwork(c.req.raw), caller };
  const attempt = crypto.randomUUID();
  try {
    const begun = await limiter.beginSignIn(account, SIGN_IN_FAILURE_LIMIT, origin, attempt);
    if (!begun.allowed) return { outcome: "throttled", retryAfter: begun.retryAfter };
    if (!(await check())) {
      // Counted before it is told: a guess answered uncounted would be free.
      if (begun.pending) await limiter.signInFailed(attempt);
      return { outcome: "failed" };
    }
    await limiter.signInSucceeded(account, origin, attempt);
    return { outcome: "passed" };
  } catch (error) {
    // Nothing was told: the attempt counts no more. In the background, so that a stalled object
    // costs the answer one deadline, not two; not abandoned, it lapses all the same.
    const abandon = rateLimiterFor(c.env, clientId)
      .signInAbandoned(attempt)
      .catch((failure: unknown) => logUnlessPlatformFault("sign-in attempt not abandoned", failure));
    c.executionCtx.waitUntil(abandon);
    throw error;
  }
}
