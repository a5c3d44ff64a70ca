/**
 * grant_type=refresh_token (RFC 6749 §6) with rotation: each use answers a new refresh token and
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
  replaceUnusedSuccessor,
  rotateRefreshToken,
} from "../../db/queries/refresh-tokens";
import { refusalOf } from "../../db/queries/users";
import { invalidGrant, invalidRequest } from "../../errors";
import { inRotationGrace, newRefreshToken, refreshTokenHash } from "../refresh-tokens";
import { revokeGrant } from "../revocation";
import { type Grant, type GrantRequest, tokenResponse } from "./grant";

export const refreshTokenGrant: Grant = async (request) => {
  const { c, client, params, now } = request;
  if (!params.refresh_token) throw invalidRequest("Parameter 'refresh_token' is missing");
  const db = c.get("db")();
  const found = await findRefreshTokenForRotation(db, await refreshTokenHash(c.env, params.refresh_token));
  // The same answer for unknown tokens and for another client's: neither tells the caller more.
  if (!found || found.token.clientId !== client.id) throw invalidGrant("The refresh token is invalid");
  const presented = found.token;
  if (presented.revoked !== null && !inRotationGrace(presented, now)) return refuseReuse(request, presented.family);
  if (presented.expires <= now) throw invalidGrant("The refresh token has expired");
  const refusal = refusalOf(found.userStatus);
  if (refusal) throw invalidGrant(`The user account is ${refusal}`);

  const successor = await newRefreshToken(c.env, now);
  const rotate = presented.revoked === null ? rotateRefreshToken : replaceUnusedSuccessor;
  // False for a racing redemption that got there first, or a successor already used or revoked: reuse.
  if (!(await rotate(db, presented, successor))) return refuseReuse(request, presented.family);
  return tokenResponse(
    request,
    { kind: "user", userId: presented.userId, grant: presented.family },
    { user_id: String(presented.userId), is_admin: false, refresh_token: successor.token },
  );
};

/** Reuse: the grant ends, its refresh and access tokens with it (RFC 9700 §4.14.2). */
async function refuseReuse({ c, client, now }: GrantRequest, family: string): Promise<never> {
  await revokeGrant(c, client.id, family, now);
  throw invalidGrant("The refresh token has been used or revoked");
}
