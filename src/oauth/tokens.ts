/**
 * Access tokens are JWTs (RFC 9068 profile) signed with Ed25519 ("EdDSA"): asymmetric, so any
 * resource server can verify them against /oauth/jwks, and verification on our own API needs no
 * database. Ed25519 rather than ES256: in a bare worker on our machines it signed 3,100-3,700
 * tokens/s against 2,300-3,400 for ES256, and its signatures are deterministic, with no per-signature
 * nonce to get wrong (docs/oauth.md "Tokens").
 *
 * Keys come from the TOKEN_SIGNING_KEYS secret: a JSON array of private JWKs, each with a kid.
 * The first one signs; all of them verify and are published, which is how keys rotate.
 */
import {
  CompactSign,
  compactVerify,
  createLocalJWKSet,
  errors as joseErrors,
  importJWK,
  jwtVerify,
  type JSONWebKeySet,
  type JWK,
  type JWTVerifyGetKey,
} from "jose";
import { IsolateCache } from "../db/isolate-cache";
import type { AccessTokenClaims, Bindings, TokenKind } from "../env";
import { ConfigurationError, OAuthError } from "../errors";
import { nowInSeconds } from "../http/datetime";

export const SIGNING_ALGORITHM = "EdDSA";
/** Longer than any access token we issue; anything bigger is refused before it is parsed. */
export const MAX_TOKEN_LENGTH = 4096;
const TOKEN_TYPE = "at+jwt";
const UTF8 = new TextEncoder();

/** A positive integer without sign, spaces, leading zeros, exponent or hex. */
const CANONICAL_ID = /^[1-9]\d{0,15}$/;

/** The userId a `sub` claim names, only in its canonical decimal spelling; null otherwise. */
export function userIdOfSubject(sub: unknown): number | null {
  return typeof sub === "string" && CANONICAL_ID.test(sub) && Number.isSafeInteger(Number(sub)) ? Number(sub) : null;
}

type KeyRing = {
  signingKey: CryptoKey;
  kid: string;
  jwks: JSONWebKeySet;
  verifyKey: JWTVerifyGetKey;
  /** Tokens these keys verified, by issuer and token: a call with the same token needs no signature check. */
  verified: IsolateCache<AccessTokenClaims>;
};

/**
 * How long an isolate trusts a token it verified without checking its signature again. Expiry and
 * audience are checked on every use, revocation elsewhere on every call (leases.ts); keys change
 * only with a deployment, which starts new isolates.
 */
const VERIFIED_TOKEN_TTL_MS = 60_000;
/** By secret value; a value that is no key ring is kept as its rejection, so every use answers 503. */
const keyRings = new Map<string | undefined, Promise<KeyRing>>();

function keyRing(secret: string | undefined): Promise<KeyRing> {
  let ring = keyRings.get(secret);
  if (!ring) {
    ring = loadKeyRing(secret);
    keyRings.set(secret, ring);
  }
  return ring;
}

/**
 * Why TOKEN_SIGNING_KEYS cannot sign and verify tokens, or null when it can. Parses and imports
 * the keys, once per value: the ring is kept for the tokens.
 */
export async function signingKeysProblem(secret: string | undefined): Promise<string | null> {
  try {
    await keyRing(secret);
    return null;
  } catch (err) {
    if (err instanceof ConfigurationError) return err.problem;
    throw err;
  }
}

// The problems name the secret, never quote it: a JSON parser's message would show a piece of it.
async function loadKeyRing(secret: string | undefined): Promise<KeyRing> {
  if (!secret) throw new ConfigurationError("TOKEN_SIGNING_KEYS is not set");
  let keys: Partial<JWK>[];
  try {
    keys = JSON.parse(secret);
  } catch {
    throw new ConfigurationError("TOKEN_SIGNING_KEYS is not JSON");
  }
  const first = Array.isArray(keys) ? keys[0] : undefined;
  if (!first?.kid || keys.some((k) => !k?.kid || !k.d)) {
    throw new ConfigurationError("TOKEN_SIGNING_KEYS must be a JSON array of private JWKs, each with a kid");
  }
  let signingKey: CryptoKey;
  try {
    signingKey = (await importJWK({ ...first, alg: SIGNING_ALGORITHM }, SIGNING_ALGORITHM)) as CryptoKey;
  } catch {
    throw new ConfigurationError("TOKEN_SIGNING_KEYS's first key is not an Ed25519 private key");
  }
  const jwks: JSONWebKeySet = {
    keys: keys.map(({ kty, crv, x, kid }) => ({ kty, crv, x, kid, alg: SIGNING_ALGORITHM, use: "sig" }) as JWK),
  };
  // Every published key must verify, and the first's public half must be its private one's: a
  // broken key would otherwise show only as tokens refused, or a key set resource servers reject.
  try {
    const publicKeys = await Promise.all(jwks.keys.map((key) => importJWK(key, SIGNING_ALGORITHM)));
    const probe = await new CompactSign(new Uint8Array(1))
      .setProtectedHeader({ alg: SIGNING_ALGORITHM })
      .sign(signingKey);
    await compactVerify(probe, publicKeys[0]!);
  } catch {
    throw new ConfigurationError("TOKEN_SIGNING_KEYS holds a key whose public half is not a valid Ed25519 key");
  }
  return {
    signingKey,
    kid: first.kid,
    jwks,
    verifyKey: createLocalJWKSet(jwks),
    verified: new IsolateCache(VERIFIED_TOKEN_TTL_MS),
  };
}

/** The public keys, for /oauth/jwks. */
export async function publicKeySet(env: Bindings): Promise<JSONWebKeySet> {
  return (await keyRing(env.TOKEN_SIGNING_KEYS)).jwks;
}

/** The audience of tokens for this API; tokens for other resources carry that resource instead. */
export function apiAudience(env: Bindings): string {
  return `${env.BASE_URL}/api`;
}

export type TokenGrant = {
  kind: TokenKind;
  clientId: string;
  merchantId: number;
  userId: number | null;
  scope: string;
  lifetime: number;
  /** A registered resource server (RFC 8707); defaults to this API. */
  audience?: string;
  /** The refresh-token family issued with it, so that revoking the grant revokes the token too. */
  grant?: string;
};

export async function issueAccessToken(env: Bindings, grant: TokenGrant, now: number): Promise<string> {
  const ring = await keyRing(env.TOKEN_SIGNING_KEYS);
  const claims = {
    client_id: grant.clientId,
    token_use: grant.kind,
    mid: grant.merchantId,
    scope: grant.scope,
    ...(grant.grant && { gid: grant.grant }),
    iss: env.BASE_URL,
    sub: grant.kind === "user" ? String(grant.userId) : grant.clientId,
    aud: grant.audience ?? apiAudience(env),
    iat: now,
    exp: now + grant.lifetime,
    jti: crypto.randomUUID(),
  };
  // The claims are all ours and typed here, so they are signed as they are: SignJWT's claim
  // builder was a twentieth of a token request's CPU in the profile.
  return new CompactSign(UTF8.encode(JSON.stringify(claims)))
    .setProtectedHeader({ alg: SIGNING_ALGORITHM, typ: TOKEN_TYPE, kid: ring.kid })
    .sign(ring.signingKey);
}

/**
 * Verifies signature, issuer, audience (this API's, or `"any"` of ours for revocation and
 * introspection), type and expiry, and returns the bearer's claims. Any failure is a 401
 * invalid_token; the reason given never includes the token.
 */
export async function verifyAccessToken(
  env: Bindings,
  token: string,
  audience: "api" | "any" = "api",
): Promise<AccessTokenClaims> {
  const ring = await keyRing(env.TOKEN_SIGNING_KEYS);
  // The issuer checked is part of the key: one set of keys could serve two base URLs.
  const verifiedKey = `${env.BASE_URL} ${token}`;
  const known = ring.verified.get(verifiedKey);
  if (known && known.expires > nowInSeconds() && (audience === "any" || known.audience === apiAudience(env))) {
    return known;
  }
  try {
    const { payload } = await jwtVerify(token, ring.verifyKey, {
      issuer: env.BASE_URL,
      ...(audience === "api" && { audience: apiAudience(env) }),
      algorithms: [SIGNING_ALGORITHM],
      typ: TOKEN_TYPE,
      requiredClaims: ["sub", "exp", "iat", "jti", "aud", "client_id", "token_use", "mid"],
    });
    const { token_use: kind, client_id: clientId, scope, sub, exp, iat, jti, gid, aud, mid } = payload;
    if (
      (kind !== "user" && kind !== "server") ||
      typeof clientId !== "string" ||
      !Number.isSafeInteger(mid) ||
      typeof jti !== "string" ||
      typeof aud !== "string" ||
      (gid !== undefined && typeof gid !== "string")
    ) {
      throw new joseErrors.JWTClaimValidationFailed("unexpected claims", payload);
    }
    // Only the subject we issue: a user's id in canonical decimal, a server token's own client id.
    const userId = kind === "user" ? userIdOfSubject(sub) : null;
    if (kind === "user" ? userId === null : sub !== clientId) {
      throw new joseErrors.JWTClaimValidationFailed("unexpected subject", payload);
    }
    const claims: AccessTokenClaims = Object.freeze({
      kind,
      clientId,
      userId,
      scope: typeof scope === "string" ? scope : "",
      expires: exp!,
      issuedAt: iat!,
      jti,
      grant: gid ?? null,
      audience: aud,
    });
    ring.verified.set(verifiedKey, claims);
    return claims;
  } catch (err) {
    if (!(err instanceof joseErrors.JOSEError)) throw err;
    throw err instanceof joseErrors.JWTExpired
      ? invalidTokenError("The access token has expired", "expired")
      : invalidTokenError("The access token is invalid");
  }
}

/** 401 invalid_token with the RFC 6750 §3 challenge; `reason` is a fixed word, never input. */
export function invalidTokenError(description: string, reason: "expired" | "invalid" | "revoked" = "invalid") {
  return new OAuthError(401, "invalid_token", description, {
    "WWW-Authenticate": `Bearer error="invalid_token", error_description="${reason}"`,
  });
}
