/**
 * grant_type=authorization_code (RFC 6749 §4.1.3) redeems a `code`-type exchange code: the
 * authenticated client must be the one the code was issued for, and `redirect_uri` the one bound
 * to it. The answer is a user token for the code's user, with a refresh token. A code is refused
 * after its 30 seconds and after its first redemption, both judged in the client's RateLimiter
 * (so two racing redemptions cannot both win, and a code cannot outlive its record there); a
 * second redemption also revokes what the first one was issued (RFC 6749 §4.1.2).
 */
import { revokeRefreshTokenFamily } from "../../db/queries/refresh-tokens";
import { findUserRefusal } from "../../db/queries/users";
import { rateLimiterFor } from "../../durable-objects/rate-limiter";
import { invalidGrant, invalidRequest } from "../../errors";
import { deleteExchangeCode, findExchangeCode } from "../../kv/codes";
import { newRefreshTokenFamily } from "../refresh-tokens";
import { revokeGrant } from "../revocation";
import { type Grant, type GrantRequest, userTokensWithNewGrant } from "./grant";

export const authorizationCodeGrant: Grant = async (request) => {
  const { c, client, params, now } = request;
  if (!params.code) throw invalidRequest("Parameter 'code' is missing");
  if (!params.redirect_uri) throw invalidRequest("Parameter 'redirect_uri' is missing");
  const { key, record } = await findExchangeCode(c.env, params.code);
  const limiter = rateLimiterFor(c.env, client.id);
  // Unknown, a webview code, or another client's: the same answer, which tells nothing more.
  if (!record || record.type !== "code" || record.clientId !== client.id) {
    // A code redeemed once is deleted from KV; its redemption here still tells a replay.
    const earlier = record ? null : await limiter.earlierRedemption(key);
    if (earlier) await refuseReplay(request, earlier.grant);
    throw invalidGrant("The code is invalid");
  }
  if (!(Date.now() < record.expiresAt)) throw invalidGrant("The code has expired");
  if (params.redirect_uri !== record.redirectUri) throw invalidGrant("The redirect URI does not match the code's");

  const grant = newRefreshTokenFamily();
  const redemption = await limiter.redeemOnce(key, record.expiresAt, grant);
  if (redemption.outcome === "expired") throw invalidGrant("The code has expired");
  if (redemption.outcome === "replayed") await refuseReplay(request, redemption.grant);
  await deleteExchangeCode(c.env, key);
  const refusal = await findUserRefusal(c.get("db"), record.userId);
  if (refusal) throw invalidGrant(`The user account is ${refusal}`);
  const tokens = await userTokensWithNewGrant(request, record.userId, { grant });
  // A replay racing this redemption may have revoked the grant before its refresh token existed.
  if (await limiter.grantRevoked(grant)) {
    await revokeRefreshTokenFamily(c.get("db"), grant, now);
    throw invalidGrant("The code has already been used");
  }
  return tokens;
};

/** A second redemption: what the first one was issued stops working too (RFC 6749 §4.1.2). */
async function refuseReplay({ c, client, now }: GrantRequest, grant: string | null): Promise<never> {
  if (grant) await revokeGrant(c, client.id, grant, now);
  throw invalidGrant("The code has already been used");
}
