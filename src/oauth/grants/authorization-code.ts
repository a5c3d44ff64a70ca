/**
 * grant_type=authorization_code (RFC 6749 §4.1.3) redeems a `code`-type exchange code: the
 * authenticated client must be the one the code was issued for, and `redirect_uri` the one bound
 * to it, and `code_verifier` must meet its PKCE challenge (RFC 7636) when the authorization
 * request had one; a public client's code must have had one (its client_id proves nothing). The
 * answer is a user token for the code's user, with a refresh token, and an ID token when the
 * authorization request had `openid` (the code's scope; a `scope` sent here is not read). A code is refused after its 30
 * seconds and after its first redemption, both judged in the client's RateLimiter (kv/codes.ts:
 * two racing redemptions cannot both win, and a code cannot outlive its record there). It is spent
 * only once the refresh token is written, so that a replay, which revokes what the first
 * redemption was issued (RFC 6749 §4.1.2), always finds it to revoke; a redemption that fails
 * before that leaves the code to the client's retry.
 */
import { findUserStatusAndUuid, refusalOf } from "../../db/queries/users";
import { invalidGrant, invalidRequest } from "../../errors";
import { spendExchangeCode } from "../../kv/codes";
import { newRefreshTokenFamily } from "../refresh-tokens";
import { subjectOf } from "../openid/claims";
import { revokeGrant } from "../revocation";
import { type Grant, userTokensWithNewGrant } from "./grant";

export const authorizationCodeGrant: Grant = async (request) => {
  const { c, client, params, now } = request;
  if (!params.code) throw invalidRequest("Parameter 'code' is missing");
  if (!params.redirect_uri) throw invalidRequest("Parameter 'redirect_uri' is missing");
  const grant = newRefreshTokenFamily();
  const spent = await spendExchangeCode(
    c,
    params.code,
    {
      type: "code",
      clientId: client.id,
      redirectUri: params.redirect_uri,
      codeVerifier: params.code_verifier,
      challengeRequired: client.publicClient,
    },
    grant,
    async (record) => {
      const user = await findUserStatusAndUuid(c.get("db")(), record.userId);
      const refusal = refusalOf(user?.status);
      if (refusal) throw invalidGrant(`The user account is ${refusal}`);
      return userTokensWithNewGrant(request, record.userId, {
        grant,
        userGrant: {
          scope: record.scope ?? "",
          subject: user && subjectOf(user),
          signIn: record.signIn,
          nonce: record.nonce,
          claims: record.claims,
        },
      });
    },
  );
  switch (spent.outcome) {
    // Unknown, a webview code, or another client's: the same answer, which tells nothing more.
    case "invalid":
      throw invalidGrant("The code is invalid");
    case "expired":
      throw invalidGrant("The code has expired");
    case "redirect_mismatch":
      throw invalidGrant("The redirect URI does not match the code's");
    case "verifier_mismatch":
      throw invalidGrant("The code_verifier does not match the code's challenge");
    case "replayed":
      if (spent.grant) {
        // Which kind of refresh token the code's grant has is not known here: ended as if
        // self-contained.
        await revokeGrant(c, client, { grant: spent.grant, reason: "code_reuse", persistent: true }, now);
      }
      throw invalidGrant("The code has already been used");
  }
  return spent.started;
};
