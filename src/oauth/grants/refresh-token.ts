/**
 * grant_type=refresh_token (RFC 6749 §6) with rotation, answering a new ID token (OpenID Connect
 * Core §12.2: the first sign-in's `auth_time` and `sid`, no `nonce`) when the grant has `openid`:
 * each use answers a new refresh token and the presented one stops working; presenting one already
 * rotated revokes its whole family (RFC 9700 §4.14.2), since either its owner or a thief now holds
 * a stolen successor; the access tokens issued under the family stop working too.
 *
 * A new grant's token carries its grant (oauth/self-contained-refresh-tokens.ts,
 * `refreshSelfContained` below): a rotated one's generation is advanced at the client's Durable
 * Object, the one call a refresh makes, and a persistent one (a confidential client's choice) is
 * not rotated. A grant started before tokens carried their grant is rotated in its row
 * (oauth/refresh-tokens.ts) by one D1 statement that checks the token, its client, its expiry and
 * its user as it replaces it, and returns the row: one round trip to the primary. Tokens of the
 * earlier form (a row each), and a request that narrows the scope (checked before anything is
 * written), read first and rotate after. Either way the answer is signed after the rotation, once
 * the signing keys are known to sign: what can fail then is a platform call (an ID token's claims
 * read), whose 503 says to retry within a second, in the grace window.
 *
 * The grace window (oauth/refresh-tokens.ts): a token rotated moments ago whose successor is still
 * unused is rotated again, its successor revoked, since that is what a client does whose answer was
 * lost. The last of two such redemptions wins, and the other's successor, revoked without use,
 * revokes the family when it is presented. So theft is still found: a thief who redeems a stolen
 * token within the window kills its owner's successor, and the owner's next refresh revokes the
 * family, the thief's tokens with it.
 */
import {
  findRefreshTokenForRotation,
  type Presented,
  type RefreshTokenRecord,
  replaceCurrentToken,
  replaceUnusedSuccessor,
  rotateInPlace,
  rotateRefreshToken,
  type TokenForRotation,
} from "../../db/queries/refresh-tokens";
import { refusalOf } from "../../db/queries/users";
import { rateLimiterFor } from "../../durable-objects/rate-limiter";
import { invalidGrant, invalidRequest, OAuthError } from "../../errors";
import { keyRing, underRingKey } from "../../security/data-protection";
import { inRotationGrace, newRefreshToken, nextRefreshToken, presentedRefreshToken } from "../refresh-tokens";
import { revokeGrant } from "../revocation";
import {
  openedGrant,
  refreshedGrant,
  selfContainedRefreshToken,
  type SelfContainedTokenParts,
  selfContainedTokenParts,
  successorExpiry,
  type TokenGrant,
} from "../self-contained-refresh-tokens";
import { assertCanSign } from "../tokens";
import type { TokenResponse } from "../../schemas/responses/oauth";
import { type Grant, type GrantRequest, userTokens } from "./grant";

type Found = NonNullable<TokenForRotation>;

export const refreshTokenGrant: Grant = async (request) => {
  const { c, client, params, now } = request;
  if (!params.refresh_token) throw invalidRequest("Parameter 'refresh_token' is missing");
  // The answer is signed after the rotation is written: keys that cannot sign are found first.
  await assertCanSign(c.env);
  const selfContained = selfContainedTokenParts(params.refresh_token);
  if (selfContained) return refreshSelfContained(request, selfContained);
  const db = c.get("db")();
  const presented = await presentedRefreshToken(c.env, params.refresh_token);
  const { tokenHashes, locatorKey } = presented;
  // The steady state: a grant's current token, its scope kept, rotated in one round trip.
  if (locatorKey !== null && request.scopes === undefined) {
    const successor = await nextRefreshToken(c.env, now, locatorKey);
    const rotated = await rotateInPlace(db, { tokenHashes, locatorKey }, client.id, successor);
    if (rotated) return answer(request, rotated, rotated.token.scope, successor.token);
    // Not rotated: the row, read now, says why.
  }
  return rotateChecked(request, presented, await findRefreshTokenForRotation(db, presented));
};

/** The presented token checked against its row as read, then rotated: every path but the steady state's. */
async function rotateChecked(
  request: GrantRequest,
  presented: Presented,
  found: Found | undefined,
): Promise<TokenResponse> {
  const { c, client, now } = request;
  // The same answer for unknown tokens and for another client's: neither tells the caller more.
  if (!found || found.token.clientId !== client.id) throw invalidGrant("The refresh token is invalid");
  const { token } = found;
  if (presented.locatorKey === null) return rotateEarlierForm(request, found);
  if (!found.current) {
    // The grant's locator, not its current token: within the window the token whose use made the
    // current one is answered anew; any other was one of the grant's earlier tokens, which only its
    // holders ever saw: reuse. Unless the current token's hash is under a key no longer read,
    // which tells nothing of the presented one.
    const again = token.rotatedFrom !== null && presented.tokenHashes.includes(token.rotatedFrom);
    if (!again || !inRotationGrace(token, now)) {
      // A hash this isolate cannot compare (the current one's; in the window, the one it was made
      // from) leaves the presented token unknown, not earlier.
      const unread = [token.secretHash, inRotationGrace(token, now) ? token.rotatedFrom : null];
      for (const stored of unread) {
        if (stored !== null && !(await underRingKey(keyRing(c.env), stored)))
          throw invalidGrant("The refresh token is invalid");
      }
      return refuseReuse(request, token);
    }
  }
  if (token.revoked !== null) return refuseReuse(request, token);
  const scope = checkedScope(request, found);
  const db = c.get("db")();
  const successor = await nextRefreshToken(c.env, now, presented.locatorKey);
  if (!found.current) {
    // Replaced only while the current token is still the one that rotation made, unused since.
    if (!(await replaceCurrentToken(db, token, successor))) return refuseReuse(request, token);
  } else {
    const named = { tokenHashes: [token.secretHash!], locatorKey: presented.locatorKey };
    // Rotated or revoked since it was read: judged again as it now is.
    if (!(await rotateInPlace(db, named, client.id, successor))) {
      return rotateChecked(request, presented, await findRefreshTokenForRotation(db, presented));
    }
  }
  return answer(request, found, scope, successor.token);
}

/** A token of the earlier form: a row of its own, revoked by its rotation, whose successor starts a grant row. */
async function rotateEarlierForm(request: GrantRequest, found: Found): Promise<TokenResponse> {
  const { c, now } = request;
  const db = c.get("db")();
  const presented = found.token;
  if (presented.revoked !== null && !inRotationGrace(presented, now)) return refuseReuse(request, presented);
  const scope = checkedScope(request, found);
  const successor = await newRefreshToken(c.env, now);
  if (presented.revoked !== null) {
    // Within the window: the unused successor is replaced; none left unused and unrevoked is reuse.
    if (!(await replaceUnusedSuccessor(db, presented, successor))) return refuseReuse(request, presented);
    return answer(request, found, scope, successor.token);
  }
  if (await rotateRefreshToken(db, presented, successor)) return answer(request, found, scope, successor.token);
  // Revoked since it was read: by a rotation racing this one (a client's retry racing its own
  // first request), which the window covers as if it had come after; by anything else, reuse.
  const rotatedSince = (await findRefreshTokenForRotation(db, { tokenHashes: [presented.tokenHash], locatorKey: null }))
    ?.token;
  if (!rotatedSince || !inRotationGrace(rotatedSince, now)) return refuseReuse(request, presented);
  const replacement = await newRefreshToken(c.env, now);
  if (!(await replaceUnusedSuccessor(db, rotatedSince, replacement))) return refuseReuse(request, presented);
  return answer(request, found, scope, replacement.token);
}

/**
 * A refresh token that carries its grant (oauth/self-contained-refresh-tokens.ts): its MAC, expiry
 * and scope checked here, then the one call a refresh makes, to the client's Durable Object. A
 * persistent token's grant is asked whether it has ended, and nothing is written, so nothing is
 * lost to a fault (a 503 leaves the token as it was). A rotated token's generation is advanced
 * there (durable-objects/rotations.ts) if it is the current one; the answer then carries the
 * grant's next token, valid 30 days from now.
 */
async function refreshSelfContained(request: GrantRequest, parts: SelfContainedTokenParts): Promise<TokenResponse> {
  const { c, client, now } = request;
  const grant = await openedGrant(c.env, client, parts, now);
  // Another client's token, an altered one, or one under a key no longer read: the same answer.
  if (grant === "invalid") throw invalidGrant("The refresh token is invalid");
  if (grant === "expired") throw invalidGrant("The refresh token has expired");
  const scope = narrowedScope(request, grant.scope);
  const { userId, subject, signIn, claims, family } = grant;
  let generation: number | undefined;
  if (grant.generation === undefined) {
    if (await rateLimiterFor(c.env, client.id, c.get("timing")).grantEnded(family)) {
      throw invalidGrant("The refresh token has been used or revoked");
    }
  } else {
    generation = await rotateAtDurableObject(request, grant, grant.generation);
  }
  const refreshToken = await selfContainedRefreshToken(c.env, client.id, refreshedGrant(grant, now, generation));
  return userTokens(request, userId, { scope, subject, signIn, claims }, { grant: family, refreshToken });
}

/**
 * The generation the rotated token of `generation` is rotated to. Not the current one: within the
 * grace window the token that made the current one has that successor replaced, as a client does
 * whose answer was lost (and a thief is found as with the grant-row form, module comment); any
 * other earlier token is reuse, and the grant ends.
 */
async function rotateAtDurableObject(
  { c, client, now }: GrantRequest,
  grant: TokenGrant,
  generation: number,
): Promise<number> {
  const limiter = rateLimiterFor(c.env, client.id, c.get("timing"));
  const keepUntilMs = successorExpiry(grant, now) * 1000;
  let rotation = await limiter.rotateGrant(grant.family, generation, now, keepUntilMs);
  while (rotation.outcome === "behind") {
    // A generation its grant never reached: the MAC says it is ours, so none was ever issued.
    if (generation > rotation.current) throw invalidGrant("The refresh token is invalid");
    const again = rotation.madeFrom === generation && inRotationGrace({ rotated: rotation.rotatedAt }, now);
    if (!again) {
      const ended = { grant: grant.family, userId: grant.userId, reason: "refresh_reuse", persistent: true } as const;
      await revokeGrant(c, client, ended, now);
      throw invalidGrant("The refresh token has been used or revoked");
    }
    // Replaced only while that successor is still current: rotated since, it is judged again.
    rotation = await limiter.rotateGrant(grant.family, generation, now, keepUntilMs, rotation.current);
  }
  if (rotation.outcome === "ended") throw invalidGrant("The refresh token has been used or revoked");
  return rotation.generation;
}

/**
 * The scope of the access token answered, once the token's expiry and its user are checked: the
 * grant's, or the narrower one asked for (RFC 6749 §6; the grant keeps its own).
 */
function checkedScope(request: GrantRequest, { token, userStatus }: Found): string {
  if (token.expires <= request.now) throw invalidGrant("The refresh token has expired");
  const refusal = refusalOf(userStatus);
  if (refusal) throw invalidGrant(`The user account is ${refusal}`);
  return narrowedScope(request, token.scope);
}

/** The grant's scope, or the narrower one asked for; wider is refused. */
function narrowedScope({ scopes: asked }: GrantRequest, grantScope: string): string {
  const granted = grantScope.split(" ").filter((scope) => scope !== "");
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
