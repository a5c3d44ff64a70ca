/**
 * grant_type=refresh_token (RFC 6749 §6) with rotation, answering a new ID token (OpenID Connect
 * Core §12.2: the first sign-in's `auth_time` and `sid`, no `nonce`) when the grant has `openid`: each use answers a new refresh token and
 * the presented one stops working; presenting one already rotated revokes its whole family
 * (RFC 9700 §4.14.2), since either its owner or a thief now holds a stolen successor; the access
 * tokens issued under the family stop working too.
 *
 * A grant's token is rotated in its row (oauth/refresh-tokens.ts) in one D1 batch that checks the
 * token, its client, its expiry and its user as it replaces it: one round trip to the primary. The
 * answer is signed after that write: a signing key that fails (a 503) leaves a rotation whose
 * answer was lost, which the client's retry gets past in the grace window, as any lost answer.
 * Tokens of the earlier form (a row each), and a request that narrows the scope (checked before
 * anything is written), read first and rotate after.
 *
 * The grace window (oauth/refresh-tokens.ts): a token rotated moments ago whose successor is still
 * unused is rotated again, its successor revoked, since that is what a client does whose answer
 * was lost. The last of two such redemptions wins, and the other's successor, revoked without use,
 * revokes the family when it is presented. So theft is still found: a thief who redeems a stolen
 * token within the window kills its owner's successor, and the owner's next refresh revokes the
 * family, the thief's tokens with it.
 */
import {
  findRefreshTokenForRotation,
  type RefreshTokenRecord,
  replaceCurrentToken,
  replaceUnusedSuccessor,
  rotateInPlace,
  rotateRefreshToken,
  type TokenForRotation,
} from "../../db/queries/refresh-tokens";
import { refusalOf } from "../../db/queries/users";
import { invalidGrant, invalidRequest, OAuthError } from "../../errors";
import { inRotationGrace, newRefreshToken, refreshTokenFamily, refreshTokenForms } from "../refresh-tokens";
import { revokeGrant } from "../revocation";
import type { TokenResponse } from "../../schemas/responses/oauth";
import { type Grant, type GrantRequest, userTokens } from "./grant";

type Found = NonNullable<TokenForRotation>;

/** The request, and the presented token's stored forms and grant (null for a token of the earlier form). */
type Presented = { request: GrantRequest; forms: string[]; family: string | null };

export const refreshTokenGrant: Grant = async (request) => {
  const { c, client, params, now } = request;
  if (!params.refresh_token) throw invalidRequest("Parameter 'refresh_token' is missing");
  const db = c.get("db")();
  const forms = await refreshTokenForms(c.env, params.refresh_token);
  const family = refreshTokenFamily(params.refresh_token);
  const presented: Presented = { request, forms, family };
  // The steady state: a grant's current token, its scope kept, rotated in one round trip.
  if (family !== null && request.scopes === undefined) {
    const successor = await newRefreshToken(c.env, now, family);
    const { rotated, found } = await rotateInPlace(db, forms, client.id, successor);
    if (rotated && found) return answer(request, found, found.token.scope, successor.token);
    // Not rotated: the row, if the token is still its current one, says why; else it may be one of its last.
    return rotateChecked(presented, found ?? (await findRefreshTokenForRotation(db, forms, family)));
  }
  return rotateChecked(presented, await findRefreshTokenForRotation(db, forms, family));
};

/** The presented token checked as read, then rotated: every path but the steady state's. */
async function rotateChecked(presented: Presented, found: Found | undefined): Promise<TokenResponse> {
  const { request } = presented;
  const { client, now } = request;
  // The same answer for unknown tokens and for another client's: neither tells the caller more.
  if (!found || found.token.clientId !== client.id) throw invalidGrant("The refresh token is invalid");
  const { token } = found;
  if (presented.family === null) return rotateEarlierForm(request, found);
  // A grant rotated in place: its current token, or one of its last, answered anew only in the window.
  if (token.revoked !== null) return refuseReuse(request, token);
  // Presented again: answered anew only within the window, and only the token whose use made the current one.
  const again = !found.current;
  const { rotatedFrom } = token;
  const mayAnswerAgain = inRotationGrace(token, now) && rotatedFrom !== null && presented.forms.includes(rotatedFrom);
  if (again && !mayAnswerAgain) return refuseReuse(request, token);
  const scope = checkedScope(request, found);
  const db = request.c.get("db")();
  const successor = await newRefreshToken(request.c.env, now, token.family);
  if (again) {
    // Replaced only while still the token that rotation made, unused since.
    if (!(await replaceCurrentToken(db, token, rotatedFrom!, successor))) return refuseReuse(request, token);
  } else if (!(await rotateInPlace(db, [token.tokenHash], client.id, successor)).rotated) {
    // Rotated or revoked since it was read: the token is read again and judged as it now is.
    return rotateChecked(presented, await findRefreshTokenForRotation(db, presented.forms, presented.family));
  }
  return answer(request, found, scope, successor.token);
}

/** A token of the earlier form: a row of its own, revoked by its rotation, whose successor is a grant row of the new form. */
async function rotateEarlierForm(request: GrantRequest, found: Found): Promise<TokenResponse> {
  const { c, now } = request;
  const db = c.get("db")();
  const presented = found.token;
  if (presented.revoked !== null && !inRotationGrace(presented, now)) return refuseReuse(request, presented);
  const scope = checkedScope(request, found);
  const successor = await newRefreshToken(c.env, now, presented.family);
  if (presented.revoked !== null) {
    // Within the window: the unused successor is replaced; none left unused and unrevoked is reuse.
    if (!(await replaceUnusedSuccessor(db, presented, successor))) return refuseReuse(request, presented);
    return answer(request, found, scope, successor.token);
  }
  if (await rotateRefreshToken(db, presented, successor)) return answer(request, found, scope, successor.token);
  // Revoked since it was read: by a rotation racing this one (a client's retry racing its own
  // first request), which the window covers as if it had come after; by anything else, reuse.
  const rotatedSince = (await findRefreshTokenForRotation(db, [presented.tokenHash], null))?.token;
  if (!rotatedSince || !inRotationGrace(rotatedSince, now)) return refuseReuse(request, presented);
  const replacement = await newRefreshToken(c.env, now, presented.family);
  if (!(await replaceUnusedSuccessor(db, rotatedSince, replacement))) return refuseReuse(request, presented);
  return answer(request, found, scope, replacement.token);
}

/**
 * The scope of the access token answered, once the token's expiry and its user are checked: the
 * grant's, or the narrower one asked for (RFC 6749 §6; the grant keeps its own).
 */
function checkedScope({ scopes: asked, now }: GrantRequest, { token, userStatus }: Found): string {
  if (token.expires <= now) throw invalidGrant("The refresh token has expired");
  const refusal = refusalOf(userStatus);
  if (refusal) throw invalidGrant(`The user account is ${refusal}`);
  const granted = token.scope.split(" ").filter((scope) => scope !== "");
  const scopes = asked ?? granted;
  if (!scopes.every((scope) => granted.includes(scope))) {
    throw new OAuthError(400, "invalid_scope", "The requested scope exceeds what the refresh token was granted");
  }
  return scopes.join(" ");
}

/** The tokens answered for the grant the token `found` holds, under the refresh token `refreshToken`. */
function answer(request: GrantRequest, { token, userUuid }: Found, scope: string, refreshToken: string) {
  return userTokens(
    request,
    token.userId,
    {
      scope,
      subject: userUuid ?? undefined,
      signIn: token.authTime === null ? undefined : { authTime: token.authTime, sid: token.sid, method: token.method },
      claims: token.claims ?? undefined,
    },
    { grant: token.family, refreshToken },
  );
}

/** Reuse: the grant ends, its refresh and access tokens with it (RFC 9700 §4.14.2). */
async function refuseReuse({ c, client, now }: GrantRequest, presented: RefreshTokenRecord): Promise<never> {
  await revokeGrant(c, client, { grant: presented.family, userId: presented.userId, reason: "refresh_reuse" }, now);
  throw invalidGrant("The refresh token has been used or revoked");
}
