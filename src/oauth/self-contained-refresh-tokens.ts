/**
 * Self-contained refresh tokens: they carry their grant, checked without D1:
 * `<locator>.<payload>.<MAC>`, or `<locator>.<generation>.<payload>.<MAC>` for a rotated one. The
 * payload (base64url JSON) says whose grant it is, its scope, what its ID tokens need and until
 * when the token is valid; the MAC is the keyed hash (data-protection key, as stored secrets are)
 * of the client's id, the locator, the generation if any and the payload, so it is good for that
 * client alone and cannot be altered. Each refresh answers a new token valid 30 days from then,
 * never past the grant's end, a year after the sign-in. The grant's D1 row (`token_hash`
 * `pt:<locator>`) is written once, at the sign-in, for signing the user out everywhere, listing,
 * revocation by locator and the retention job. A grant ends in its client's Durable Object
 * (revocations.ts keeps every ended grant as long as any of its tokens can live), which a refresh
 * asks: ending one is immediate.
 *
 * - **Persistent** (docs/oauth.md "Persistent refresh tokens"), for a confidential client that
 *   chose them (`refreshTokenRotation: false`): not rotated; the one presented stays valid until
 *   its own expiry.
 * - **Rotated** (docs/oauth.md "Refresh tokens"), every other client's new grants: the generation
 *   advances at each refresh in the client's Durable Object (durable-objects/rotations.ts), which
 *   finds an earlier one as reuse and ends the grant. Tokens of the grant-row form
 *   (oauth/refresh-tokens.ts) issued before are rotated in D1 as they were.
 *
 * Persistent tokens came first, so some names elsewhere keep the word for the whole form: the `pt:`
 * row key, and the `persistent` flag of a revocation in the RateLimiter's RPC, which the isolates
 * of two versions share during a deploy.
 */
import { base64url } from "jose";
import * as z from "zod/mini";
import { SELF_CONTAINED_GRANT_PREFIX } from "../db/queries/refresh-tokens";
import type { Bindings } from "../env";
import { type RequestedClaims, requestedClaimsSchema, SIGN_IN_METHODS } from "../schemas/requested-claims";
import { keyRing, protectSecret, verifySecret } from "../security/data-protection";
import type { OpenIdSignIn } from "./openid/id-tokens";
import { LOCATOR, newLocator, REFRESH_TOKEN_LIFETIME } from "./refresh-tokens";

/** How long after the sign-in a self-contained grant ends, however often it is refreshed. */
export const SELF_CONTAINED_GRANT_LIFETIME = 365 * 24 * 3600;

/** What a self-contained refresh token says of its grant. */
export type TokenGrant = {
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
  /** A rotated token's generation; undefined for a persistent one. */
  generation?: number | undefined;
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
export type SelfContainedTokenParts = { locator: string; generation: number | null; payload: string; mac: string };

/** A generation as a token carries it: a decimal integer, no leading zero, within a safe integer. */
const GENERATION = /^(0|[1-9][0-9]{0,14})$/;

/**
 * The token's parts when it has this form (its MAC unchecked), else null: a token of the grant-row
 * form, or none of ours.
 */
export function selfContainedTokenParts(token: string): SelfContainedTokenParts | null {
  const segments = token.split(".");
  if (segments.length !== 4 && segments.length !== 5) return null;
  const [locator, ...rest] = segments as [string, ...string[]];
  const generation = segments.length === 5 ? rest.shift()! : null;
  const [payload, keyTag, hash] = rest as [string, string, string];
  if (generation !== null && !GENERATION.test(generation)) return null;
  if (!LOCATOR.test(locator) || !BASE64URL.test(payload) || !BASE64URL.test(keyTag) || !BASE64URL.test(hash)) {
    return null;
  }
  return { locator, generation: generation === null ? null : Number(generation), payload, mac: `${keyTag}.${hash}` };
}

/**
 * The MAC's input: the token is good for one client alone. The locator (22 characters) and the
 * generation (15 digits at most) never read as each other, so neither form's input is the other's.
 */
const macInput = (clientId: string, { locator, generation, payload }: Omit<SelfContainedTokenParts, "mac">) =>
  generation === null ? `${clientId}.${locator}.${payload}` : `${clientId}.${locator}.${generation}.${payload}`;

/** The token for `grant`, its MAC under the current data-protection key. */
export async function selfContainedRefreshToken(env: Bindings, clientId: string, grant: TokenGrant): Promise<string> {
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
  const generation = grant.generation ?? null;
  const mac = await protectSecret(keyRing(env), macInput(clientId, { locator: grant.locator, generation, payload }));
  return `${grant.locator}${generation === null ? "" : `.${generation}`}.${payload}.${mac}`;
}

/**
 * The grant the token carries, when its MAC is good for `clientId` under a key of the ring
 * (compared in constant time); null for another client's token, an altered one, or one under a
 * key no longer read.
 */
export async function openSelfContainedToken(
  env: Bindings,
  clientId: string,
  parts: SelfContainedTokenParts,
): Promise<TokenGrant | null> {
  const { locator, generation, payload, mac } = parts;
  if ((await verifySecret(keyRing(env), macInput(clientId, parts), mac)) === null) return null;
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
    ...(generation !== null && { generation }),
  };
}

/**
 * A new grant's first token (generation 0 when it is rotated), and its D1 row's key and end: the
 * row outlives the tokens by nothing, as each is valid 30 days at most and none past the grant's end.
 */
export async function newSelfContainedGrant(
  env: Bindings,
  clientId: string,
  grant: Omit<TokenGrant, "locator" | "issued" | "expires" | "endsBy">,
  now: number,
) {
  const locator = newLocator();
  const endsBy = now + SELF_CONTAINED_GRANT_LIFETIME;
  const first = refreshedGrant({ ...grant, locator, issued: now, expires: now, endsBy }, now, grant.generation);
  return {
    token: await selfContainedRefreshToken(env, clientId, first),
    tokenHash: `${SELF_CONTAINED_GRANT_PREFIX}${locator}`,
    expires: endsBy,
  };
}

/**
 * The grant's token after a refresh at `now`, of `generation` when it is rotated (undefined: a
 * persistent one): valid 30 days from then, never past the grant's end.
 */
export function refreshedGrant(grant: TokenGrant, now: number, generation: number | undefined): TokenGrant {
  return { ...grant, issued: now, expires: successorExpiry(grant, now), generation };
}

/** When a token issued at `now` expires: 30 days on, never past the grant's end. */
export function successorExpiry(grant: Pick<TokenGrant, "endsBy">, now: number): number {
  return Math.min(now + REFRESH_TOKEN_LIFETIME, grant.endsBy);
}

/**
 * The grant the token carries for `client`: its MAC good for the client and unexpired; a persistent
 * one never for a public client (its client_id proves nothing, and an import may make a client
 * public). Else why not, which the refresh grant says and introspection does not.
 */
export async function openedGrant(
  env: Bindings,
  client: { id: string; publicClient: boolean },
  parts: SelfContainedTokenParts,
  now: number,
): Promise<TokenGrant | "invalid" | "expired"> {
  const persistentAtPublic = client.publicClient && parts.generation === null;
  const grant = persistentAtPublic ? null : await openSelfContainedToken(env, client.id, parts);
  if (!grant) return "invalid";
  if (grant.expires <= now) return "expired";
  return grant;
}
