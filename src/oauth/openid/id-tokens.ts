/**
 * ID tokens (OpenID Connect Core §2, §3.1.3.6): issued beside the access token by the
 * authorization code, refresh and password grants when the grant has `openid`. Signed RS256
 * unless the client registered EdDSA (`id_token_signed_response_alg`), typ JWT.
 */
import { base64url } from "jose";
import type { ClientRecord } from "../../db/queries/clients";
import type { SignInMethod } from "../../db/schema";
import type { Bindings } from "../../env";
import { authenticationContext } from "../authentication-context";
import type { SigningAlgorithm } from "../signing-algorithms";
import { signToken } from "../tokens";

/** An hour: an ID token says who signed in, for the client to start its own session with. */
export const ID_TOKEN_LIFETIME = 3600;

/** What an OpenID Connect grant carries from its sign-in to every ID token issued under it. */
export type OpenIdSignIn = {
  /** Unix seconds of the sign-in: `auth_time`. */
  authTime: number;
  /** The browser session's public id (`sid`), when a browser session made the grant. */
  sid: string | null;
  method: SignInMethod | null;
};

export type IdTokenRequest = {
  client: Pick<ClientRecord, "id" | "idTokenSignedResponseAlg">;
  subject: string;
  signIn: OpenIdSignIn;
  /** The access token issued beside it, whose hash the ID token carries (`at_hash`). */
  accessToken: string;
  nonce?: string | undefined;
  /** Claims about the user asked for in the ID token (the `claims` parameter). */
  userClaims?: Record<string, unknown>;
};

export async function issueIdToken(env: Bindings, request: IdTokenRequest, now: number): Promise<string> {
  const { client, signIn } = request;
  const alg: SigningAlgorithm = client.idTokenSignedResponseAlg ?? "RS256";
  const context = signIn.method === null ? undefined : authenticationContext(signIn.method);
  return signToken(env, alg, "JWT", {
    ...request.userClaims,
    iss: env.BASE_URL,
    sub: request.subject,
    aud: client.id,
    azp: client.id,
    exp: now + ID_TOKEN_LIFETIME,
    iat: now,
    auth_time: signIn.authTime,
    ...(request.nonce !== undefined && { nonce: request.nonce }),
    at_hash: await tokenHash(alg, request.accessToken),
    ...(signIn.sid !== null && { sid: signIn.sid }),
    ...context,
  });
}

/**
 * `at_hash` (Core §3.1.3.6): the left half of the token's hash by the signature's own hash
 * function, base64url; Ed25519 signs with SHA-512 (OpenID Connect Core errata 2).
 */
async function tokenHash(alg: SigningAlgorithm, token: string): Promise<string> {
  const digest = await crypto.subtle.digest(alg === "EdDSA" ? "SHA-512" : "SHA-256", new TextEncoder().encode(token));
  return base64url.encode(new Uint8Array(digest, 0, digest.byteLength / 2));
}
