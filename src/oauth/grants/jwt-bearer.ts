/**
 * JWT assertions: urn:ietf:params:oauth:grant-type:jwt-bearer (RFC 7523 §2.1), and the older
 * `assertion` grant of OAuth 2.0 draft 11 (§4.1.3), mapped onto the same checks when its
 * `assertion_type` names a JWT.
 *
 * The client signs the JWT with HS256 and its signing secret (the one that signs its responses);
 * the client authenticates at the token endpoint as for every grant. `iss` is the client's id,
 * `sub` the userId of a user connected to the client who may sign in, `aud` this server (the token
 * endpoint's URL or the issuer), `exp` at most five minutes ahead, and `jti` spent once: its use is
 * recorded in the client's RateLimiter until `exp`. The answer is a user token, without a refresh
 * token: the client can make a new assertion whenever it needs one.
 */
import { errors as joseErrors, jwtVerify } from "jose";
import { recordGrantWithoutRefreshToken } from "../../db/queries/refresh-tokens";
import { findUserRefusal, isConnected } from "../../db/queries/users";
import { redeem } from "../../durable-objects/one-time-values";
import type { Bindings } from "../../env";
import { invalidGrant, invalidRequest } from "../../errors";
import { keyRing, openSecret } from "../../security/data-protection";
import { newRefreshTokenFamily } from "../refresh-tokens";
import { signingSecretsAt } from "../signing-secrets";
import { userIdOfSubject } from "../tokens";
import { type Grant, type GrantRequest, tokenResponse } from "./grant";

/** How far ahead an assertion may expire (RFC 7523 §3 lets the server limit it). */
const MAX_ASSERTION_LIFETIME = 300;
const MAX_JTI_LENGTH = 256;
/** The draft's `assertion_type` values that name a JWT: RFC 7523's grant and RFC 8693's token type. */
const JWT_ASSERTION_TYPES = ["urn:ietf:params:oauth:grant-type:jwt-bearer", "urn:ietf:params:oauth:token-type:jwt"];

export const jwtBearerGrant: Grant = (request) => redeemAssertion(request);

export const assertionGrant: Grant = (request) => {
  const type = request.params.assertion_type;
  if (!type) throw invalidRequest("Parameter 'assertion_type' is missing");
  if (!JWT_ASSERTION_TYPES.includes(type)) {
    throw invalidGrant(`Unsupported assertion_type; use ${JWT_ASSERTION_TYPES.join(" or ")}`);
  }
  return redeemAssertion(request);
};

/**
 * The assertion's claims when it is signed with one of the client's signing secrets (over a
 * rotation, the new one or the previous one until its end) and is otherwise valid.
 */
async function verifiedAssertion(
  env: Bindings,
  assertion: string,
  sealedSecrets: string[],
  clientId: string,
  now: number,
) {
  const base = env.BASE_URL;
  for (const [i, sealed] of sealedSecrets.entries()) {
    const secret = new TextEncoder().encode(await openSecret(keyRing(env), sealed));
    try {
      const { payload } = await jwtVerify(assertion, secret, {
        algorithms: ["HS256"],
        issuer: clientId,
        audience: [`${base}/oauth/token`, base],
        requiredClaims: ["sub", "exp", "jti"],
        currentDate: new Date(now * 1000),
      });
      return payload;
    } catch (err) {
      if (!(err instanceof joseErrors.JOSEError)) throw err;
      // Another secret may have signed it; any other fault is the assertion's own.
      if (err instanceof joseErrors.JWSSignatureVerificationFailed && i < sealedSecrets.length - 1) continue;
      throw invalidGrant(
        err instanceof joseErrors.JWTExpired ? "The assertion has expired" : "The assertion is invalid",
      );
    }
  }
  throw invalidGrant("The assertion is invalid");
}

async function redeemAssertion(request: GrantRequest) {
  const { c, client, params, now } = request;
  if (!params.assertion) throw invalidRequest("Parameter 'assertion' is missing");
  const { verifiesWith } = signingSecretsAt(client, now);
  if (verifiesWith.length === 0) throw invalidGrant("The client has no signing secret to verify assertions with");
  const claims = await verifiedAssertion(c.env, params.assertion, verifiesWith, client.id, now);
  const { sub, exp, jti } = claims;
  if (exp! > now + MAX_ASSERTION_LIFETIME) {
    throw invalidGrant(`The assertion must expire within ${MAX_ASSERTION_LIFETIME} seconds`);
  }
  if (typeof jti !== "string" || jti.length === 0 || jti.length > MAX_JTI_LENGTH) {
    throw invalidGrant(`The assertion's jti must be a string of 1 to ${MAX_JTI_LENGTH} characters`);
  }
  const userId = userIdOfSubject(sub);
  if (userId === null) throw invalidGrant("The assertion's sub must be a userId");
  const db = c.get("db")();
  if (!(await isConnected(db, client.id, userId))) throw invalidGrant("The subject is not a user of this client");
  const refusal = await findUserRefusal(db, userId);
  if (refusal) throw invalidGrant(`The user account is ${refusal}`);
  // The grant is recorded first, so that signing the user out finds its token (a grant recorded for
  // an assertion then refused is never refreshable, and names no token: nothing); then the jti is
  // spent, at once, and only the token signed after: a fault anywhere leaves the assertion usable.
  const grant = newRefreshTokenFamily();
  await recordGrantWithoutRefreshToken(db, { clientId: client.id, userId, family: grant, scope: "", now });
  const redeemed = await redeem(
    c,
    client.id,
    { key: `jti:${jti}`, expiresAt: exp! * 1000, grant: null, reserve: false },
    () => tokenResponse(request, { kind: "user", userId, grant }, { user_id: String(userId), is_admin: false }),
  );
  if (redeemed.outcome === "expired") throw invalidGrant("The assertion has expired");
  if (redeemed.outcome === "replayed") throw invalidGrant("The assertion has already been used");
  return redeemed.started;
}
