/**
 * The service's signed tokens: access tokens (RFC 9068 profile), ID tokens and logout tokens,
 * all JWTs, signed with the keys of the TOKEN_SIGNING_KEYS secret: a JSON array of private JWKs,
 * each with a kid, Ed25519 ("EdDSA") and RSA ("RS256") keys in any order. The first key of each
 * algorithm signs with it; every key verifies and is published (/oauth/jwks), which is how keys
 * rotate.
 *
 * Access tokens are EdDSA unless a client asks for RS256: asymmetric, so any resource server can
 * verify them, and verification on our own API needs no database. Ed25519 rather than ES256: in a
 * bare worker on our machines it signed 3,100-3,700 tokens/s against 2,300-3,400 for ES256, and
 * its signatures are deterministic, with no per-signature nonce to get wrong (docs/oauth.md
 * "Tokens"). ID tokens are RS256 unless a client asks for EdDSA: OpenID Connect's default, and
 * the only algorithm Schibsted's token libraries verify (docs/openid-connect.md).
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
import { SIGNING_ALGORITHMS, type SigningAlgorithm } from "./signing-algorithms";

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

type Signer = { key: CryptoKey; kid: string };

type KeyRing = {
  signers: Record<SigningAlgorithm, Signer>;
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
 * Throws the 503 of TOKEN_SIGNING_KEYS that cannot sign (a ConfigurationError), as signing would:
 * for a grant that writes before it signs, so that a misconfiguration is found before the write.
 */
export async function assertCanSign(env: Bindings): Promise<void> {
  await keyRing(env.TOKEN_SIGNING_KEYS);
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

/** The algorithm a private JWK signs with: by its key type; an `alg` it names must agree. */
function algorithmOf(jwk: Partial<JWK>): SigningAlgorithm | null {
  const algorithm = jwk.kty === "OKP" && jwk.crv === "Ed25519" ? "EdDSA" : jwk.kty === "RSA" ? "RS256" : null;
  return jwk.alg === undefined || jwk.alg === algorithm ? algorithm : null;
}

/** A key's public half as published: nothing private, its kid, algorithm and use. */
function publicJwk(jwk: Partial<JWK>, alg: SigningAlgorithm): JWK {
  const { kty, kid } = jwk;
  const material = alg === "EdDSA" ? { crv: jwk.crv, x: jwk.x } : { n: jwk.n, e: jwk.e };
  return { kty, ...material, kid, alg, use: "sig" } as JWK;
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
  if (!Array.isArray(keys) || keys.length === 0 || keys.some((k) => !k?.kid || !k.d)) {
    throw new ConfigurationError("TOKEN_SIGNING_KEYS must be a JSON array of private JWKs, each with a kid");
  }
  const algorithms = keys.map(algorithmOf);
  if (algorithms.includes(null)) {
    throw new ConfigurationError("TOKEN_SIGNING_KEYS holds a key that is neither Ed25519 (EdDSA) nor RSA (RS256)");
  }
  const firsts = SIGNING_ALGORITHMS.map((alg) => keys[algorithms.indexOf(alg)]);
  if (firsts.includes(undefined)) {
    throw new ConfigurationError("TOKEN_SIGNING_KEYS needs an Ed25519 key (access tokens) and an RSA key (ID tokens)");
  }
  const jwks: JSONWebKeySet = { keys: keys.map((key, i) => publicJwk(key, algorithms[i]!)) };
  // Every key must import, every published key verify, and each signing key's public half be its
  // private one's: a broken key would otherwise show only as tokens refused, or a key set resource
  // servers reject.
  const signers = {} as Record<SigningAlgorithm, Signer>;
  try {
    const publicKeys = await Promise.all(jwks.keys.map((key) => importJWK(key, key.alg)));
    for (const [index, alg] of SIGNING_ALGORITHMS.entries()) {
      const jwk = firsts[index]!;
      const key = (await importJWK({ ...jwk, alg }, alg)) as CryptoKey;
      const probe = await new CompactSign(new Uint8Array(1)).setProtectedHeader({ alg }).sign(key);
      await compactVerify(probe, publicKeys[keys.indexOf(jwk)]!);
      signers[alg] = { key, kid: jwk.kid! };
    }
  } catch {
    throw new ConfigurationError("TOKEN_SIGNING_KEYS holds a key whose private or public half is not valid");
  }
  return {
    signers,
    jwks,
    verifyKey: createLocalJWKSet(jwks),
    verified: new IsolateCache(VERIFIED_TOKEN_TTL_MS),
  };
}

/** The public keys, for /oauth/jwks. */
export async function publicKeySet(env: Bindings): Promise<JSONWebKeySet> {
  return (await keyRing(env.TOKEN_SIGNING_KEYS)).jwks;
}

/**
 * `claims` signed as a JWT of type `typ` with the algorithm's signing key. The claims are all ours
 * and typed by the caller, so they are signed as they are: SignJWT's claim builder was a
 * twentieth of a token request's CPU in the profile.
 */
export async function signToken(
  env: Bindings,
  alg: SigningAlgorithm,
  typ: string,
  claims: Record<string, unknown>,
): Promise<string> {
  const signer = (await keyRing(env.TOKEN_SIGNING_KEYS)).signers[alg];
  return new CompactSign(UTF8.encode(JSON.stringify(claims)))
    .setProtectedHeader({ alg, typ, kid: signer.kid })
    .sign(signer.key);
}

/** Verifies a JWT of ours (signature by a published key, issuer, expiry) and returns its claims. */
export async function verifyOwnToken(
  env: Bindings,
  token: string,
  options: { typ?: string; audience?: string; clockTolerance?: number } = {},
) {
  const ring = await keyRing(env.TOKEN_SIGNING_KEYS);
  return jwtVerify(token, ring.verifyKey, { issuer: env.BASE_URL, algorithms: [...SIGNING_ALGORITHMS], ...options });
}

/** The audience of tokens for this API; tokens for other resources carry that resource instead. */
export function apiAudience(env: Bindings): string {
  return `${env.BASE_URL}/api`;
}

/**
 * Whether `resource` (RFC 8707) names this API: its audience, its base URL (the resource of its
 * protected resource metadata, RFC 9728) or the service's origin, a trailing slash either way.
 * Tokens for it carry the API's audience.
 */
export function namesThisApi(env: Bindings, resource: string): boolean {
  const named = resource.endsWith("/") ? resource.slice(0, -1) : resource;
  return named === env.BASE_URL || named === apiAudience(env) || named === apiResource(env.BASE_URL);
}

/** This API's resource identifier (RFC 9728 §1.2): its base URL. Tokens for it have the API audience. */
export const apiResource = (base: string) => `${base}/api/2`;

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
  /** The client's `access_token_signed_response_alg`; EdDSA when it has none. */
  algorithm?: SigningAlgorithm | undefined;
  /** The user's claims userinfo gives beyond the scope's (the `claims` parameter's names). */
  userinfoClaims?: string[] | undefined;
};

export async function issueAccessToken(env: Bindings, grant: TokenGrant, now: number): Promise<string> {
  return signToken(env, grant.algorithm ?? "EdDSA", TOKEN_TYPE, {
    client_id: grant.clientId,
    token_use: grant.kind,
    mid: grant.merchantId,
    scope: grant.scope,
    ...(grant.grant && { gid: grant.grant }),
    ...(grant.userinfoClaims && { claims: grant.userinfoClaims }),
    iss: env.BASE_URL,
    sub: grant.kind === "user" ? String(grant.userId) : grant.clientId,
    aud: grant.audience ?? apiAudience(env),
    iat: now,
    exp: now + grant.lifetime,
    jti: crypto.randomUUID(),
  });
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
      algorithms: [...SIGNING_ALGORITHMS],
      typ: TOKEN_TYPE,
      requiredClaims: ["sub", "exp", "iat", "jti", "aud", "client_id", "token_use", "mid"],
    });
    const { token_use: kind, client_id: clientId, scope, sub, exp, iat, jti, gid, aud, mid, claims: named } = payload;
    if (
      (kind !== "user" && kind !== "server") ||
      typeof clientId !== "string" ||
      !Number.isSafeInteger(mid) ||
      typeof jti !== "string" ||
      typeof aud !== "string" ||
      (gid !== undefined && typeof gid !== "string") ||
      (named !== undefined && !(Array.isArray(named) && named.every((name) => typeof name === "string")))
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
      userinfoClaims: (named as string[] | undefined) ?? [],
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
