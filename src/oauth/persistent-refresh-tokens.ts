/**
 * Persistent refresh tokens (docs/oauth.md "Persistent refresh tokens"): for a confidential client
 * that chose them (`refreshTokenRotation: false`), a refresh token is not rotated, and is checked
 * without D1. It carries its grant, `<locator>.<payload>.<MAC>`: the payload (base64url JSON) says
 * whose grant it is, its scope, what its ID tokens need and until when the token is valid; the MAC
 * is the keyed hash (data-protection key, as stored secrets are) of the client's id, the locator
 * and the payload, so it is good for that client alone and cannot be altered. A grant ends in its
 * client's Durable Object (revocations.ts keeps every ended grant as long as any of its tokens can
 * live), which a refresh asks: ending one is as immediate as for a rotated token. Each refresh
 * answers a new token valid 30 days from then (the one presented stays valid until its own
 * expiry), never past the grant's end, a year after the sign-in. The grant's D1 row
 * (`token_hash` `pt:<locator>`) is written once, at the sign-in, for signing the user out
 * everywhere, listing, revocation by locator and the retention job.
 */
import { base64url } from "jose";
import * as z from "zod/mini";
import { PERSISTENT_GRANT_PREFIX } from "../db/queries/refresh-tokens";
import type { Bindings } from "../env";
import { type RequestedClaims, requestedClaimsSchema, SIGN_IN_METHODS } from "../schemas/requested-claims";
import { keyRing, protectSecret, verifySecret } from "../security/data-protection";
import type { OpenIdSignIn } from "./openid/id-tokens";
import { LOCATOR, newLocator, REFRESH_TOKEN_LIFETIME } from "./refresh-tokens";

/** How long after the sign-in a persistent grant ends, however often it is refreshed. */
export const PERSISTENT_GRANT_LIFETIME = 365 * 24 * 3600;

/** What a persistent refresh token says of its grant. */
export type PersistentGrant = {
  /** The grant's random id in D1 (`pt:<locator>`), which revocation by token finds it by. */
  locator: string;
  /** The refresh-token family, as its access tokens' `grant` claim names it. */
  family: string;
  userId: number;
  scope: string;
  /** When this token was issued and until when it is valid (Unix seconds). */
  issued: number;
  expires: number;
  /** When the grant ends, whatever the refreshes (a year after the sign-in). */
  endsBy: number;
  /** What its ID tokens need, for a grant with `openid`. */
  subject?: string | undefined;
  signIn?: OpenIdSignIn | undefined;
  claims?: RequestedClaims | undefined;
};

/** The payload as the token carries it, in short names. */
const payloadSchema = z.object({
  f: z.string(),
  u: z.number().check(z.int()),
  s: z.string(),
  i: z.number().check(z.int()),
  e: z.number().check(z.int()),
  x: z.number().check(z.int()),
  sub: z.optional(z.string()),
  at: z.optional(z.number().check(z.int())),
  sid: z.optional(z.nullable(z.string())),
  m: z.optional(z.nullable(z.enum(SIGN_IN_METHODS))),
  cl: z.optional(requestedClaimsSchema),
});

const BASE64URL = /^[A-Za-z0-9_-]+$/;
const decoder = new TextDecoder();

/** A token of this form, split: what a refresh, a revocation or an introspection then opens. */
export type PersistentTokenParts = { locator: string; payload: string; mac: string };

/** The token's parts when it has this form (its MAC unchecked), else null: a rotated token, or none of ours. */
export function persistentTokenParts(token: string): PersistentTokenParts | null {
  const [locator, payload, keyTag, hash, ...more] = token.split(".");
  if (more.length > 0 || !locator || !payload || !keyTag || !hash) return null;
  if (!LOCATOR.test(locator) || !BASE64URL.test(payload) || !BASE64URL.test(keyTag) || !BASE64URL.test(hash)) {
    return null;
  }
  return { locator, payload, mac: `${keyTag}.${hash}` };
}

/** The MAC's input: the token is good for one client alone. */
const macInput = (clientId: string, locator: string, payload: string) => `${clientId}.${locator}.${payload}`;

/** The token for `grant`, its MAC under the current data-protection key. */
export async function persistentRefreshToken(env: Bindings, clientId: string, grant: PersistentGrant): Promise<string> {
  const payload = base64url.encode(
    JSON.stringify({
      f: grant.family,
      u: grant.userId,
      s: grant.scope,
      i: grant.issued,
      e: grant.expires,
      x: grant.endsBy,
      ...(grant.subject !== undefined && { sub: grant.subject }),
      ...(grant.signIn && { at: grant.signIn.authTime, sid: grant.signIn.sid, m: grant.signIn.method }),
      ...(grant.claims && { cl: grant.claims }),
    }),
  );
  const mac = await protectSecret(keyRing(env), macInput(clientId, grant.locator, payload));
  return `${grant.locator}.${payload}.${mac}`;
}

/**
 * The grant the token carries, when its MAC is good for `clientId` under a key of the ring
 * (compared in constant time); null for another client's token, an altered one, or one under a
 * key no longer read.
 */
export async function openPersistentToken(
  env: Bindings,
  clientId: string,
  { locator, payload, mac }: PersistentTokenParts,
): Promise<PersistentGrant | null> {
  if ((await verifySecret(keyRing(env), macInput(clientId, locator, payload), mac)) === null) return null;
  let json: unknown;
  try {
    json = JSON.parse(decoder.decode(base64url.decode(payload)));
  } catch {
    return null;
  }
  const parsed = payloadSchema.safeParse(json);
  if (!parsed.success) return null;
  const p = parsed.data;
  return {
    locator,
    family: p.f,
    userId: p.u,
    scope: p.s,
    issued: p.i,
    expires: p.e,
    endsBy: p.x,
    subject: p.sub,
    signIn: p.at === undefined ? undefined : { authTime: p.at, sid: p.sid ?? null, method: p.m ?? null },
    claims: p.cl,
  };
}

/**
 * A new persistent grant's first token, and its D1 row's key and end: the row outlives the tokens
 * by nothing, as each is valid 30 days at most and none past the grant's end.
 */
export async function newPersistentGrant(
  env: Bindings,
  clientId: string,
  grant: Omit<PersistentGrant, "locator" | "issued" | "expires" | "endsBy">,
  now: number,
) {
  const locator = newLocator();
  const endsBy = now + PERSISTENT_GRANT_LIFETIME;
  const first = refreshedGrant({ ...grant, locator, issued: now, expires: now, endsBy }, now);
  return {
    token: await persistentRefreshToken(env, clientId, first),
    tokenHash: `${PERSISTENT_GRANT_PREFIX}${locator}`,
    expires: endsBy,
  };
}

/** The grant's token after a refresh at `now`: valid 30 days from then, never past the grant's end. */
export function refreshedGrant(grant: PersistentGrant, now: number): PersistentGrant {
  return { ...grant, issued: now, expires: Math.min(now + REFRESH_TOKEN_LIFETIME, grant.endsBy) };
}
