/**
 * grant_type=password: a user token for testing without a redirect (RFC 6749 §4.3), with a
 * refresh token, and an ID token for `scope=openid`. The redirect URI must be registered for the client, exactly. Guessing is
 * throttled as on the login page (password-sign-in.ts), but the network is the client's server's.
 */
import { isConnected, recordSignIn } from "../../db/queries/users";
import { invalidGrant, invalidRequest, OAuthError } from "../../errors";
import { signInEntry } from "../../events/audit";
import { subjectOf } from "../openid/claims";
import { signInWithPassword } from "../password-sign-in";
import { isRegisteredRedirectUri } from "../redirect-uri";
import { type Grant, userTokensWithNewGrant } from "./grant";

export const passwordGrant: Grant = async (request) => {
  const { c, client, params, now } = request;
  const { username, password, redirect_uri: redirectUri } = params;
  if (!username) throw invalidRequest("Parameter 'username' is missing");
  if (password === undefined) throw invalidRequest("Parameter 'password' is missing");
  if (!redirectUri) throw invalidRequest("Parameter 'redirect_uri' is missing");
  if (!isRegisteredRedirectUri(client.redirectUris, redirectUri, client.publicClient)) {
    throw new OAuthError(400, "redirect_uri_mismatch", "The redirect URI is not registered for this client");
  }

  const signIn = await signInWithPassword(c, client, username, password, now, "client server");
  switch (signIn.outcome) {
    case "throttled":
      throw new OAuthError(
        420,
        "access_denied",
        "Rate limit exceeded: too many failed sign-in attempts; try again later",
        { "Retry-After": String(signIn.retryAfter) },
      );
    case "wrong":
      throw invalidGrant("Invalid username or password");
    case "refused":
      throw invalidGrant(`The user account is ${signIn.refusal}`);
  }
  const { user } = signIn;
  // No second factor can be given here: a user who has one, or a client that requires one, signs in on the login page.
  if (user.secondFactor || client.requireSecondFactor) {
    throw invalidGrant("The user must sign in with a second factor, through the authorization endpoint");
  }
  const db = c.get("db")();
  const connected = await isConnected(db, client.id, user.id);
  if (!connected && !client.autoApprove) {
    throw invalidGrant("The user has not granted this client access");
  }

  return userTokensWithNewGrant(request, user.id, {
    writes: [recordSignIn(db, user.id, now), signInEntry(c, client, user.id, "pwd", now)],
    userGrant: {
      scope: (request.scopes ?? []).join(" "),
      subject: subjectOf(user),
      signIn: { authTime: now, sid: null, method: "pwd" },
    },
  });
};
