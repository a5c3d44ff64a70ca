/**
 * grant_type=refresh_token (RFC 6749 §6) with rotation, answering a new ID token (OpenID Connect
 * Core §12.2: the first sign-in's `auth_time` and `sid`, no `nonce`) when the grant has `openid`: each use answers a new refresh token and
 * the presented one stops working; presenting one already rotated revokes its whole family
 * (RFC 9700 §4.14.2), since either its owner or a thief now holds a stolen successor; the access
 * tokens issued under the family stop working too.
 *
 * One exception, the grace window (oauth/refresh-tokens.ts): a token rotated moments ago whose
 * successor is still unused is rotated again, its successor revoked, since that is what a client
 * does whose answer was lost. The last of two such redemptions wins, and the other's successor,
 * revoked without use, revokes the family when it is presented. So theft is still found: a thief
 * who redeems a stolen token within the window kills its owner's successor, and the owner's next
 * refresh revokes the family, the thief's tokens with it.
 */
import {
  findRefreshTokenForRotation,
  type RefreshTokenRecord,
  replaceUnusedSuccessor,
  rotateRefreshToken,
} from "../../db/queries/refresh-tokens";
import { refusalOf } from "../../db/queries/users";
import { invalidGrant, invalidRequest, OAuthError } from "../../errors";
import { inRotationGrace, newRefreshToken, refreshTokenForms } from "../refresh-tokens";
import { revokeGrant } from "../revocation";
import { type Grant, type GrantRequest, userTokens } from "./grant";

export const refreshTokenGrant: Grant = async (request) => {
  const { c, client, params, now } = request;
  if (!params.refresh_token) throw invalidRequest("Parameter 'refresh_token' is missing");
  const db = c.get("db")();
  const found = await findRefreshTokenForRotation(db, await refreshTokenForms(c.env, params.refresh_token));
  // The same answer for unknown tokens and for another client's: neither tells the caller more.
  if (!found || found.token.clientId !== client.id) throw invalidGrant("The refresh token is invalid");
  const presented = found.token;
  if (presented.revoked !== null && !inRotationGrace(presented, now)) return refuseReuse(request, presented);
  if (presented.expires <= now) throw invalidGrant("The refresh token has expired");
  const refusal = refusalOf(found.userStatus);
  if (refusal) throw invalidGrant(`The user account is ${refusal}`);

  // RFC 6749 §6: a narrower scope for this access token; the grant keeps its own.
  const granted = presented.scope.split(" ").filter((scope) => scope !== "");
  const { scopes = granted } = request;
  if (!scopes.every((scope) => granted.includes(scope))) {
    throw new OAuthError(400, "invalid_scope", "The requested scope exceeds what the refresh token was granted");
  }

  const successor = await newRefreshToken(c.env, now);
  // Signed before anything is written: a signing key that fails (a 503 while misconfigured) must
  // not leave behind a rotation whose successor the client never got.
  const response = await userTokens(
    request,
    presented.userId,
    {
      scope: scopes.join(" "),
      subject: found.userUuid ?? undefined,
      signIn:
        presented.authTime === null
          ? undefined
          : { authTime: presented.authTime, sid: presented.sid, method: presented.method },
      claims: presented.claims ?? undefined,
    },
    { grant: presented.family, refreshToken: successor.token },
  );
  if (presented.revoked !== null) {
    // Within the window: the unused successor is replaced; none left unused and unrevoked is reuse.
    if (!(await replaceUnusedSuccessor(db, presented, successor))) return refuseReuse(request, presented);
    return response;
  }
  if (await rotateRefreshToken(db, presented, successor)) return response;
  // Revoked since it was read: by a rotation racing this one (a client's retry racing its own
  // first request), which the window covers as if it had come after; by anything else, reuse.
  const rotatedSince = (await findRefreshTokenForRotation(db, [presented.tokenHash]))?.token;
  if (!rotatedSince || !inRotationGrace(rotatedSince, now)) return refuseReuse(request, presented);
  const replacement = await newRefreshToken(c.env, now);
  if (!(await replaceUnusedSuccessor(db, rotatedSince, replacement))) return refuseReuse(request, presented);
  return { ...response, refresh_token: replacement.token };
};

/** Reuse: the grant ends, its refresh and access tokens with it (RFC 9700 §4.14.2). */
async function refuseReuse({ c, client, now }: GrantRequest, presented: RefreshTokenRecord): Promise<never> {
  await revokeGrant(c, client, { grant: presented.family, userId: presented.userId, reason: "refresh_reuse" }, now);
  throw invalidGrant("The refresh token has been used or revoked");
}
