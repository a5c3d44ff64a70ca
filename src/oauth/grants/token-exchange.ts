/**
 * urn:ietf:params:oauth:grant-type:token-exchange (RFC 8693): client B presents a user access token
 * issued to client A as `subject_token` and receives its own token for that user, with a refresh
 * token: what an exchange code does in two steps (A asks for a code, B redeems it), in one, for a
 * B that already holds A's token. A and B must belong to the same merchant, as for exchange
 * codes, and the user must have granted B access (connected to it) unless B is `autoApprove`, as
 * for the password grant. No delegation (`actor_token`) and no other audience. Every problem with
 * the subject token is `invalid_request`, as RFC 8693 §2.2.2 asks.
 */
import { findClientRights } from "../../db/queries/clients";
import { findUserRefusal, isConnected } from "../../db/queries/users";
import { rateLimiterFor } from "../../durable-objects/rate-limiter";
import { invalidGrant, invalidRequest, OAuthError } from "../../errors";
import { verifyAccessToken } from "../tokens";
import { type Grant, userTokensWithNewGrant } from "./grant";

const ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token";
/** Our access tokens are JWTs, so either name of their type is accepted. */
const SUBJECT_TOKEN_TYPES = [ACCESS_TOKEN_TYPE, "urn:ietf:params:oauth:token-type:jwt"];

export const tokenExchangeGrant: Grant = async (request) => {
  const { c, client, params } = request;
  if (!params.subject_token) throw invalidRequest("Parameter 'subject_token' is missing");
  if (!params.subject_token_type) throw invalidRequest("Parameter 'subject_token_type' is missing");
  if (!SUBJECT_TOKEN_TYPES.includes(params.subject_token_type)) {
    throw invalidRequest(`Unsupported subject_token_type; use ${ACCESS_TOKEN_TYPE}`);
  }
  if (params.requested_token_type !== undefined && params.requested_token_type !== ACCESS_TOKEN_TYPE) {
    throw invalidRequest(`Unsupported requested_token_type; only ${ACCESS_TOKEN_TYPE} is issued`);
  }
  if (params.actor_token !== undefined) throw invalidRequest("Delegation (actor_token) is not supported");
  if (params.audience !== undefined || params.resource !== undefined) {
    throw new OAuthError(400, "invalid_target", "Tokens are only exchanged for this API");
  }

  let subject;
  try {
    subject = await verifyAccessToken(c.env, params.subject_token);
  } catch (err) {
    if (err instanceof OAuthError) throw invalidRequest("The subject token is invalid or has expired");
    throw err;
  }
  if (subject.userId === null) throw invalidRequest("The subject token must be a user's access token");
  // The issuing client's merchant as stored now, as every API call is scoped.
  const [issuer] = await findClientRights(c.get("db")(), [subject.clientId]);
  if (!issuer || issuer.merchantId !== client.merchantId) {
    throw invalidRequest("The subject token was issued to a client of another merchant");
  }
  const { jti, grant } = subject;
  if (await rateLimiterFor(c.env, subject.clientId, c.get("timing")).revoked({ jti, grant })) {
    throw invalidRequest("The subject token has been revoked");
  }
  const db = c.get("db")();
  const refusal = await findUserRefusal(db, subject.userId);
  if (refusal) throw invalidRequest(`The user account is ${refusal}`);
  // The user's consent to this client, as the password grant asks for it.
  if (!client.autoApprove && !(await isConnected(db, client.id, subject.userId))) {
    throw invalidGrant("The user has not granted this client access");
  }
  return userTokensWithNewGrant(request, subject.userId, { issuedTokenType: ACCESS_TOKEN_TYPE });
};
