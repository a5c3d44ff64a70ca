/**
 * The authorization endpoint's answers to the client (RFC 6749 §4.1.2): a 303 to a registered
 * redirect URI with `code` (an exchange code of type `code`: 30 seconds, once, bound to the
 * client, the redirect URI and the PKCE challenge) or `error`, with `state` and the issuer
 * (`iss`, RFC 9207, so a client that talks to several servers can tell whose answer it got).
 * The page that receives it must not leak the code, so no referrer goes along.
 */
import type { Context } from "hono";
import { type ClientRecord, findClient } from "../db/queries/clients";
import type { AppEnv } from "../env";
import { createExchangeCode, type ExchangeCodeRecord } from "../kv/codes";
import { withResponseParameters } from "./authorization-request";
import { isRegisteredRedirectUri } from "./redirect-uri";

export type CodeGrant = Pick<
  ExchangeCodeRecord,
  "clientId" | "userId" | "redirectUri" | "scope" | "signIn" | "claims"
> & {
  state?: string | undefined;
  codeChallenge?: string | undefined;
  nonce?: string | undefined;
};

export async function redirectWithCode(c: Context<AppEnv>, grant: CodeGrant): Promise<Response> {
  const code = await createExchangeCode(
    c.env,
    {
      type: "code",
      userId: grant.userId,
      issuingClientId: grant.clientId,
      clientId: grant.clientId,
      redirectUri: grant.redirectUri,
      ...(grant.codeChallenge !== undefined && { codeChallenge: grant.codeChallenge }),
      ...(grant.scope && { scope: grant.scope }),
      ...(grant.nonce !== undefined && { nonce: grant.nonce }),
      ...(grant.signIn && { signIn: grant.signIn }),
      ...(grant.claims && { claims: grant.claims }),
    },
    Date.now(),
  );
  return redirectTo(c, withResponseParameters(grant.redirectUri, { code, state: grant.state, iss: c.env.BASE_URL }));
}

export function redirectWithError(
  c: Context<AppEnv>,
  uri: string,
  failure: { error: string; description: string },
  state: string | undefined,
): Response {
  return redirectTo(c, errorLocation(c.env.BASE_URL, uri, failure, state));
}

/** `uri` with an authorization error (RFC 6749 §4.1.2.1), `state` and our `iss`: a failed flow's way back. */
export function errorLocation(
  issuer: string,
  uri: string,
  failure: { error: string; description: string },
  state: string | undefined,
): string {
  return withResponseParameters(uri, {
    error: failure.error,
    error_description: failure.description,
    state,
    iss: issuer,
  });
}

/**
 * The way back to a client from a page where its flow ended: `uri` with `error` (and `state`),
 * while `uri` is still registered for the client; none for a client that is gone or a URI it no
 * longer has. The client comes along for the page's branding.
 */
export async function clientWayBack(
  c: Context<AppEnv>,
  clientId: string,
  uri: string,
  failure: { error: string; description: string },
  state?: string,
): Promise<{ client: ClientRecord; href: string } | undefined> {
  const client = await findClient(c.get("db")(), clientId);
  if (!client || !isRegisteredRedirectUri(client.redirectUris, uri, client.publicClient)) return undefined;
  return { client, href: errorLocation(c.env.BASE_URL, uri, failure, state) };
}

/** A 303 that is never cached and carries no referrer (the URL it leaves may hold a code). */
export function redirectTo(c: Context<AppEnv>, location: string): Response {
  c.header("Cache-Control", "no-store");
  c.header("Referrer-Policy", "no-referrer");
  return c.redirect(location, 303);
}
