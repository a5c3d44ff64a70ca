/**
 * grant_type=password: a user token for testing without a redirect (RFC 6749 §4.3), with a
 * refresh token. The redirect URI must be registered for the client, exactly. Guessing is
 * throttled per account and client (RFC 6749 §4.3.2 asks for protection against brute force):
 * the client's RateLimiter counts each attempt before the password is checked.
 */
import { base64url } from "jose";
import { findUserByEmail, isConnected, recordPasswordSignIn } from "../../db/queries/users";
import { REFUSED_USER_STATUSES } from "../../db/schema";
import { rateLimiterFor } from "../../durable-objects/rate-limiter";
import { invalidGrant, invalidRequest, OAuthError } from "../../errors";
import { emailLookupKey } from "../../schemas/email-address";
import { verifyPassword } from "../../security/password";
import { isRegisteredRedirectUri } from "../redirect-uri";
import { type Grant, userTokensWithNewGrant } from "./grant";

export const passwordGrant: Grant = async ({ c, client, params, now }) => {
  const { username, password, redirect_uri: redirectUri } = params;
  if (!username) throw invalidRequest("Parameter 'username' is missing");
  if (password === undefined) throw invalidRequest("Parameter 'password' is missing");
  if (!redirectUri) throw invalidRequest("Parameter 'redirect_uri' is missing");
  if (params.resource !== undefined) {
    throw new OAuthError(
      400,
      "invalid_request",
      "Parameter 'resource' is only accepted with grant_type=client_credentials",
    );
  }
  if (!isRegisteredRedirectUri(client.redirectUris, redirectUri)) {
    throw new OAuthError(400, "redirect_uri_mismatch", "The redirect URI is not registered for this client");
  }

  const db = c.get("db");
  const user = await findUserByEmail(db, username);
  const limiter = rateLimiterFor(c.env, client.id);
  const account = user ? `user:${user.id}` : await unknownAccountKey(username);
  const attempt = await limiter.beginSignIn(account);
  if (!attempt.allowed) {
    throw new OAuthError(
      420,
      "access_denied",
      "Rate limit exceeded: too many failed sign-in attempts; try again later",
      {
        "Retry-After": String(attempt.retryAfter),
      },
    );
  }

  const passwordMatches = await verifyPassword(password, user?.passwordHash ?? null);
  if (!user || !passwordMatches) throw invalidGrant("Invalid username or password");
  await limiter.signInSucceeded(account);
  const refusal = REFUSED_USER_STATUSES[user.status];
  if (refusal) throw invalidGrant(`The user account is ${refusal}`);

  const connected = await isConnected(db, client.id, user.id);
  if (!connected && !client.autoApprove) {
    throw invalidGrant("The user has not granted this client access");
  }

  return userTokensWithNewGrant({ c, client, params, now }, user.id, {
    writes: [recordPasswordSignIn(db, user.id, now)],
  });
};

/**
 * Attempts are counted per user, whichever of their addresses is tried; a name that is no user's
 * is counted by a hash of it, so the limiter never holds an address.
 */
async function unknownAccountKey(username: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(emailLookupKey(username)));
  return `name:${base64url.encode(new Uint8Array(digest))}`;
}
