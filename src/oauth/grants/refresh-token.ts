/**
 * grant_type=refresh_token (RFC 6749 §6) with rotation: each use answers a new refresh token and
 * the presented one stops working; presenting one already rotated revokes its whole family
 * (RFC 9700 §4.14.2), since either its owner or a thief now holds a stolen successor; the access
 * tokens issued under the family stop working too.
 */
import { findRefreshTokenForRotation, rotateRefreshToken } from "../../db/queries/refresh-tokens";
import { refusalOf } from "../../db/queries/users";
import { invalidGrant, invalidRequest } from "../../errors";
import { newRefreshToken, refreshTokenHash } from "../refresh-tokens";
import { revokeGrant } from "../revocation";
import { type Grant, tokenResponse } from "./grant";

export const refreshTokenGrant: Grant = async (request) => {
  const { c, client, params, now } = request;
  if (!params.refresh_token) throw invalidRequest("Parameter 'refresh_token' is missing");
  const db = c.get("db")();
  const found = await findRefreshTokenForRotation(db, await refreshTokenHash(c.env, params.refresh_token));
  // The same answer for unknown tokens and for another client's: neither tells the caller more.
  if (!found || found.token.clientId !== client.id) throw invalidGrant("The refresh token is invalid");
  const presented = found.token;
  if (presented.revoked !== null) {
    await revokeGrant(c, client.id, presented.family, now);
    throw invalidGrant("The refresh token has been used or revoked");
  }
  if (presented.expires <= now) throw invalidGrant("The refresh token has expired");
  const refusal = refusalOf(found.userStatus);
  if (refusal) throw invalidGrant(`The user account is ${refusal}`);

  const successor = await newRefreshToken(c.env, now);
  if (!(await rotateRefreshToken(db, presented, successor))) {
    // Another redemption of the same token got there first: that is reuse too.
    await revokeGrant(c, client.id, presented.family, now);
    throw invalidGrant("The refresh token has been used or revoked");
  }
  return tokenResponse(
    request,
    { kind: "user", userId: presented.userId, grant: presented.family },
    { user_id: String(presented.userId), is_admin: false, refresh_token: successor.token },
  );
};
