/**
 * The isolate's side of redemptions.ts: how a request spends one of a client's one-time values (an
 * exchange code, an assertion's jti) so that a platform fault never burns it. The value is spent by
 * the request's attempt, an id that its repeated calls share, so that the platform layer may repeat
 * a call whose answer was lost; and it stays spent only if the request answers: whatever is thrown
 * before then (a platform fault, a refusal, a bug) lets it go, for the client's retry to redeem,
 * since what the attempt wrote has reached no one.
 */
import type { Context } from "hono";
import type { AppEnv } from "../env";
import { logUnlessPlatformFault, TryAgainLater } from "../errors";
import { rateLimiterFor } from "./rate-limiter";
import type { Redemption } from "./rate-limiter-rpc";

/**
 * A one-time value of the client's: its RateLimiter key, its expiry (ms), what its redemption
 * starts (`grant`, revoked on a replay) and whether it is `reserved` while that is written and
 * spent after (a code, whose replay must find what the first redemption started, to revoke it)
 * or spent at once (an assertion's jti: nothing is written for it).
 */
export type OneTimeValue = { key: string; expiresAt: number; grant: string | null; reserve: boolean };

/** `redeemed` with what `start` made; `replayed` with the grant the first redemption started, to revoke. */
export type Redeemed<T> =
  { outcome: "redeemed"; started: T } | { outcome: "expired" } | { outcome: "replayed"; grant: string | null };

/**
 * Redeems `value`, one of `clientId`'s, for what `start` makes (tokens, a session). A value another
 * attempt holds is a 503 with Retry-After, refused without revoking anything: that attempt may be
 * this client's own, still writing or failed with its release lost (its hold then lapses). So is
 * this attempt's own redemption when its hold lapsed before `start` was done: its commit is
 * refused, as another attempt may have taken the value over, and only one may answer with what it
 * started. The value is released: the retry redeems it, or finds it replayed by the attempt that
 * took it over and revokes what that one started. The RateLimiter judges expiry after replay, so
 * a replayed value is told as such, not as expired.
 */
export async function redeem<T>(
  c: Context<AppEnv>,
  clientId: string,
  value: OneTimeValue,
  start: () => Promise<T>,
): Promise<Redeemed<T>> {
  const { key, expiresAt, grant, reserve } = value;
  const limiter = rateLimiterFor(c.env, clientId, c.get("timing"));
  const attempt = crypto.randomUUID();
  let redemption: Redemption;
  try {
    redemption = await limiter.redeemOnce(key, expiresAt, grant, { id: attempt, reserve });
    if (redemption.outcome === "reserved" || redemption.outcome === "redeemed") {
      const started = await start();
      // A value spent at once (a RateLimiter from before reservations spends every value so) has
      // nothing to commit.
      if (redemption.outcome === "reserved" && !(await limiter.commitRedemption(key, attempt))) {
        throw redemptionUnfinished(1);
      }
      return { outcome: "redeemed", started };
    }
  } catch (error) {
    // In the background, so that a stalled object costs the answer one deadline, not two; the
    // client retries after Retry-After. Not released, the value stays held until its hold lapses.
    const release = rateLimiterFor(c.env, clientId)
      .releaseRedemption(key, attempt)
      .catch((failure: unknown) => logUnlessPlatformFault("one-time value not released", failure));
    c.executionCtx.waitUntil(release);
    throw error;
  }
  if (redemption.outcome === "held") throw redemptionUnfinished(redemption.retryAfter);
  return redemption;
}

/** A redemption that cannot be answered now: the client's retry, after `retryAfter` seconds, can be. */
function redemptionUnfinished(retryAfter: number): TryAgainLater {
  return new TryAgainLater("The code is being redeemed; try again shortly", retryAfter);
}
