/**
 * Client authentication at /oauth/token (RFC 6749 §2.3.1): HTTP Basic or client_id and
 * client_secret in the body, never both. Every failure is the same 401 invalid_client_id, and an
 * unknown client costs the same secret hash as a known one.
 *
 * Found clients are cached per isolate for CLIENT_CACHE_TTL_MS, so a token request usually needs
 * no D1 round trip (measured locally: 904 -> 4,150 token requests/s; docs/benchmarks.md).
 * Changes to a client (secret, grants, redirect URIs, allow-list, deletion) apply within that
 * time, as they do for the rate limiter's policy; a secret that fails against a cached record is
 * checked against D1 before it is refused, so a rotated secret works at once. After a rotation the
 * previous secret works too until the end its rotation set (docs/management.md); a disabled
 * client is not found. Unknown ids are
 * never cached, so made-up ids cannot fill the cache. A cached id therefore answers faster than
 * an unknown one: that tells only whether a client id is in use, and client ids are public. The
 * secret that last verified answers faster again: that tells its sender only what the answer says.
 */
import type { Context } from "hono";
import type { Database } from "../db/client";
import { IsolateCache } from "../db/isolate-cache";
import { findClient, type ClientRecord, rehashClientSecret } from "../db/queries/clients";
import type { AppEnv } from "../env";
import { logUnlessPlatformFault, OAuthError } from "../errors";
import { decodeBase64Utf8 } from "../http/encoding";
import { nowInSeconds } from "../http/datetime";
import { clientIp, ipAllowed } from "../http/ip";
import { matchesSecret } from "../security/constant-time";
import { keyRing, movesToCurrentKey, protectSecret, verifySecret } from "../security/data-protection";

const CLIENT_CACHE_TTL_MS = 60_000;
/**
 * A found client, and the last secret that verified against this very record, with until when
 * it is valid (a previous secret's end; Infinity for the current one): the same secret presented
 * again is compared with it instead of being hashed again (docs/benchmarks.md "The token
 * endpoint's client cache"). It lives only in the isolate's memory, beside the key that hashes it.
 */
type CachedClient = { record: ClientRecord; verifiedSecret?: string; verifiedUntil?: number };
const clientCache = new IsolateCache<CachedClient>(CLIENT_CACHE_TTL_MS);

/**
 * Forgets this isolate's copy of a client that was just changed or deleted here, so that this
 * isolate never answers from the old record; other isolates' copies end within their minute.
 */
export function forgetClient(id: string): void {
  clientCache.set(id, undefined);
}

type BodyCredentials = { client_id?: string | undefined; client_secret?: string | undefined };
type Credentials = { id: string; secret: string; method: "basic" | "body" };

/**
 * The authenticated client. With `publicAllowed`, a public client (a native app, which cannot
 * keep a secret) may name itself by `client_id` alone: PKCE binds its codes instead.
 */
export async function authenticateClient(
  c: Context<AppEnv>,
  body: BodyCredentials,
  publicAllowed = false,
): Promise<ClientRecord> {
  const authorization = c.req.header("Authorization");
  if (publicAllowed && body.client_id && body.client_secret === undefined && authorization === undefined) {
    const client = (clientCache.get(body.client_id) ?? (await loadClient(c.get("db")(), body.client_id)))?.record;
    if (!client?.publicClient) {
      throw clientAuthFailed("body", "Client authentication is required: HTTP Basic or client_id and client_secret");
    }
    return allowedFrom(c, client);
  }
  const credentials = presentedCredentials(authorization, body);
  const now = nowInSeconds();
  const cached = clientCache.get(credentials.id);
  if (
    cached?.verifiedSecret !== undefined &&
    cached.verifiedUntil! > now &&
    matchesSecret(credentials.secret, cached.verifiedSecret)
  ) {
    return allowedFrom(c, registeredMethod(cached.record, credentials.method));
  }
  let client = cached ?? (await loadClient(c.get("db")(), credentials.id));
  let validUntil = await secretValidUntil(c, credentials.secret, client?.record, now);
  if (cached && validUntil === undefined) {
    client = await loadClient(c.get("db")(), credentials.id);
    validUntil = await secretValidUntil(c, credentials.secret, client?.record, now);
  }
  if (!client || validUntil === undefined) throw clientAuthFailed(credentials.method, "Client authentication failed");
  client.verifiedSecret = credentials.secret;
  client.verifiedUntil = validUntil;
  return allowedFrom(c, registeredMethod(client.record, credentials.method));
}

/**
 * Until when `secret` is the client's: for ever as its current secret, until the previous
 * secret's end as that one (a rotation's overlap); undefined when it is neither. An unknown
 * client costs the one hash a known one does. A secret hashed under the previous data-protection
 * key is hashed again under the current one, after the answer (docs/operations.md).
 */
async function secretValidUntil(
  c: Context<AppEnv>,
  secret: string,
  record: ClientRecord | undefined,
  now: number,
): Promise<number | undefined> {
  const ring = keyRing(c.env);
  const rehash = (column: "secretHash" | "previousSecretHash", stored: string) => {
    if (movesToCurrentKey(ring, now)) rehashUnderCurrentKey(c, record!.id, column, stored, secret);
  };
  const current = record?.secretHash ?? "";
  const asCurrent = await verifySecret(ring, secret, current);
  if (asCurrent === "previous") rehash("secretHash", current);
  if (asCurrent) return Infinity;
  const previous = record?.previousSecretHash;
  const expires = record?.previousSecretExpires ?? 0;
  const asPrevious = previous && expires > now ? await verifySecret(ring, secret, previous) : null;
  if (asPrevious === "previous") rehash("previousSecretHash", previous!);
  return asPrevious ? expires : undefined;
}

/**
 * After the answer, stores a client's `secret`, which verified under the previous data-protection
 * key, hashed under the current one (unless the column changed meanwhile): nothing then depends on
 * the previous key for it. A failure leaves it for the next use. Only once the rotation's switch
 * margin has passed (movesToCurrentKey): isolates on the previous key alone may serve until then.
 */
export function rehashUnderCurrentKey(
  c: Context<AppEnv>,
  clientId: string,
  column: "secretHash" | "previousSecretHash" | "registrationTokenHash",
  stored: string,
  secret: string,
): void {
  c.executionCtx.waitUntil(
    protectSecret(keyRing(c.env), secret)
      .then((hash) => rehashClientSecret(c.get("db")(), clientId, column, stored, hash))
      .then(() => forgetClient(clientId))
      .catch((err) => logUnlessPlatformFault("client-auth: hashing a secret under the current key failed", err)),
  );
}

/**
 * The client, when it authenticated the way it registered (`token_endpoint_auth_method`); an
 * imported client without one may use either.
 */
function registeredMethod(client: ClientRecord, method: Credentials["method"]): ClientRecord {
  const registered = client.tokenEndpointAuthMethod;
  if (registered === "client_secret_basic" && method !== "basic") {
    throw clientAuthFailed(method, "This client authenticates with HTTP Basic (client_secret_basic)");
  }
  if (registered === "client_secret_post" && method !== "body") {
    throw clientAuthFailed(
      method,
      "This client authenticates with client_id and client_secret in the body (client_secret_post)",
    );
  }
  return client;
}

function allowedFrom(c: Context<AppEnv>, client: ClientRecord): ClientRecord {
  if (!ipAllowed(client.ipAllowList, clientIp(c.req.raw))) {
    throw new OAuthError(403, "access_denied", "Requesting IP is not whitelisted");
  }
  return client;
}

async function loadClient(db: Database, id: string): Promise<CachedClient | undefined> {
  const record = await findClient(db, id);
  const client = record && { record };
  clientCache.set(id, client);
  return client;
}

function presentedCredentials(authorization: string | undefined, body: BodyCredentials): Credentials {
  const basic = authorization?.match(/^Basic +(\S+) *$/i)?.[1];
  if (basic !== undefined) {
    if (body.client_secret !== undefined) {
      throw clientAuthFailed("basic", "Use one client authentication method: HTTP Basic or body parameters, not both");
    }
    const [id, secret] = decodeBasic(basic);
    if (body.client_id !== undefined && body.client_id !== id) {
      throw clientAuthFailed("basic", "client_id does not match the HTTP Basic credentials");
    }
    return { id, secret, method: "basic" };
  }
  if (!body.client_id || body.client_secret === undefined) {
    throw clientAuthFailed("body", "Client authentication is required: HTTP Basic or client_id and client_secret");
  }
  return { id: body.client_id, secret: body.client_secret, method: "body" };
}

/** Basic credentials are the form-encoded id and secret joined by a colon, then base64 (§2.3.1). */
function decodeBasic(encoded: string): [string, string] {
  let decoded: string;
  try {
    decoded = decodeBase64Utf8(encoded);
  } catch {
    throw clientAuthFailed("basic", "Malformed HTTP Basic credentials");
  }
  const colon = decoded.indexOf(":");
  if (colon <= 0) throw clientAuthFailed("basic", "Malformed HTTP Basic credentials");
  return [formDecode(decoded.slice(0, colon)), formDecode(decoded.slice(colon + 1))];
}

function formDecode(value: string): string {
  try {
    return decodeURIComponent(value.replace(/\+/g, " "));
  } catch {
    return value;
  }
}

function clientAuthFailed(method: Credentials["method"], description: string): OAuthError {
  const headers: Record<string, string> =
    method === "basic" ? { "WWW-Authenticate": 'Basic realm="oauth", charset="UTF-8"' } : {};
  return new OAuthError(401, "invalid_client_id", description, headers);
}
