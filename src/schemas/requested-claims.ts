import * as z from "zod/mini";

/**
 * How a user signed in (db/schema sessions.method): a password or a sign-in link mailed to them,
 * alone or with a second factor (`+otp`: an authenticator's code or a recovery code), or a second
 * factor alone in a webview session, which an app's token started; or a passkey, device-bound
 * (`hwk`) or synced (`swk`).
 * oauth/authentication-context.ts says what each is worth.
 */
export const SIGN_IN_METHODS = ["pwd", "email", "pwd+otp", "email+otp", "otp", "hwk", "swk"] as const;
export type SignInMethod = (typeof SIGN_IN_METHODS)[number];

/**
 * The user's claims an authorization request asked for by name (its `claims` parameter), for the
 * ID token and for userinfo: kept with its code and its grant's refresh tokens.
 */
export const requestedClaimsSchema = z.object({ idToken: z.array(z.string()), userinfo: z.array(z.string()) });
export type RequestedClaims = z.infer<typeof requestedClaimsSchema>;
