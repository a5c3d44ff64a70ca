/**
 * The rules of a client's OpenID Connect and registration metadata (RFC 7591, OpenID Connect
 * Registration §2), shared by the import file and POST /oauth/register: the same field means the
 * same, whichever way it comes.
 */
import { isLoopbackUri, redirectUriProblem } from "../oauth/redirect-uri";
import { SUPPORTED_SCOPES } from "../oauth/openid/scopes";

export const TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"] as const;

/**
 * Why `uri` cannot be a client's logo or home page: an absolute https URL without a fragment, in
 * printable ASCII (percent-encoded beyond it), as a response header (the pages' CSP) carries it.
 */
export function pageUriProblem(uri: string): string | null {
  return /^[\x21-\x7e]+$/.test(uri) && URL.canParse(uri) && new URL(uri).protocol === "https:" && !uri.includes("#")
    ? null
    : "must be an absolute https URL without a fragment, in printable ASCII";
}

/**
 * Why `uri` cannot be an endpoint the service posts to (back-channel logout tokens, Back-Channel
 * Logout §2.2; callbacks): an absolute https URL without a fragment, or, where `loopback` (local
 * development, so that tests can receive them), http on 127.0.0.1 or [::1].
 */
export function serverEndpointProblem(uri: string, { loopback = false } = {}): string | null {
  if (loopback && isLoopbackUri(uri) && URL.canParse(uri) && !uri.includes("#")) return null;
  return pageUriProblem(uri);
}

/**
 * Why `uris` cannot be a client's redirect (or post-logout redirect) URIs: each by the redirect
 * URI rules, loopback ones only for a public client (RFC 8252 §7.3).
 */
export function redirectUrisProblem(uris: readonly string[], publicClient: boolean): string | null {
  for (const uri of uris) {
    const problem = redirectUriProblem(uri, { loopback: publicClient });
    if (problem !== null) return `${uri}: ${problem}`;
  }
  return null;
}

/** Why `scope` cannot be the scopes a client may ask for: space-separated scopes we define. */
export function clientScopeProblem(scope: string): string | null {
  const values = scope.split(" ");
  const unknown = values.find((value) => !(SUPPORTED_SCOPES as readonly string[]).includes(value));
  return unknown === undefined ? null : `'${unknown}' is not a scope this service defines`;
}
