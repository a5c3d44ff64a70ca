/**
 * Passkeys: WebAuthn registration and assertion as this relying party checks them (docs/factors.md).
 * @oslojs/webauthn parses what the authenticator signed (client data, authenticator data, the
 * attestation object, COSE keys); the signature is verified by WebCrypto against the credential's
 * key, stored as a JWK. The relying party is BASE_URL: its host is the RP ID and its origin the
 * only origin taken. User verification is required, attestation is `none` (its statement is not
 * read), and the credential must be discoverable. A challenge is 256 random bits that travel in
 * the page sealed with their purpose, user and expiry (5 minutes), and are spent once in the
 * client's RateLimiter as codes are: the page holds it, nothing is written to show it.
 */
import { bigIntBytes } from "@oslojs/binary";
import { decodeCBORToNativeValueNoLeftoverBytes } from "@oslojs/cbor";
import { decodePKIXECDSASignature, p256 } from "@oslojs/crypto/ecdsa";
import {
  ClientDataType,
  COSEKeyType,
  type COSEPublicKey,
  coseAlgorithmEdDSA,
  coseAlgorithmES256,
  coseAlgorithmRS256,
  coseEllipticCurveEd25519,
  coseEllipticCurveP256,
  createAssertionSignatureMessage,
  parseAttestationObject,
  parseAuthenticatorData,
  parseClientDataJSON,
} from "@oslojs/webauthn";
import type { Context } from "hono";
import { base64url } from "jose";
import * as z from "zod/mini";
import { redeem } from "../../durable-objects/one-time-values";
import type { AppEnv, Bindings } from "../../env";
import { timingSafeEqual } from "../../security/constant-time";
import { keyRing, openSecret, sealSecret } from "../../security/data-protection";
import { randomToken } from "../../security/random-token";

const CHALLENGE_LIFETIME_MS = 5 * 60_000;
const ALGORITHMS = [coseAlgorithmES256, coseAlgorithmEdDSA, coseAlgorithmRS256];
/** Authenticator data flags (WebAuthn §6.1): backup eligible, backed up. */
const BACKUP_ELIGIBLE = 0x08;
const BACKED_UP = 0x10;
/** Longer than any credential id (1,023 bytes at most) or response a browser sends, base64url. */
const MAX_FIELD = 16_384;

export type RelyingParty = { id: string; origin: string };

/**
 * The relying party of BASE_URL; null where passkeys cannot work: an IP address is no RP ID
 * (`http://127.0.0.1:8787` locally: `http://localhost:8787` can).
 */
export function relyingParty(env: Bindings): RelyingParty | null {
  const url = new URL(env.BASE_URL);
  if (/^[\d.]+$/.test(url.hostname) || url.hostname.startsWith("[")) return null;
  return { id: url.hostname, origin: url.origin };
}

export type ChallengePurpose = "register" | "sign-in";

const challengeSchema = z.object({
  challenge: z.string(),
  purpose: z.enum(["register", "sign-in"]),
  /** The client whose page it is, in whose RateLimiter it is spent: no other client's page takes it. */
  clientId: z.string(),
  userId: z.nullable(z.number()),
  expiresAt: z.number(),
});
type Challenge = z.infer<typeof challengeSchema>;

/**
 * A new challenge, and the sealed ticket the page carries it in: for `userId`'s registration, or
 * any sign-in, on a page of `clientId`'s.
 */
export async function newChallenge(env: Bindings, purpose: ChallengePurpose, userId: number | null, clientId: string) {
  const challenge = randomToken();
  const sealed: Challenge = { challenge, purpose, userId, clientId, expiresAt: Date.now() + CHALLENGE_LIFETIME_MS };
  return { challenge, ticket: await sealSecret(keyRing(env), JSON.stringify(sealed)) };
}

/** PublicKeyCredentialCreationOptionsJSON for a new passkey of the user `handle` names. */
export function creationOptions(
  rp: RelyingParty,
  user: { handle: string; name: string },
  challenge: string,
  existing: { id: string; transports: string[] }[],
) {
  return {
    rp: { id: rp.id, name: rp.id },
    user: { id: user.handle, name: user.name, displayName: user.name },
    challenge,
    pubKeyCredParams: ALGORITHMS.map((alg) => ({ type: "public-key", alg })),
    timeout: CHALLENGE_LIFETIME_MS,
    excludeCredentials: existing.map(({ id, transports }) => ({ type: "public-key", id, transports })),
    authenticatorSelection: { residentKey: "required", requireResidentKey: true, userVerification: "required" },
    attestation: "none",
  };
}

/** PublicKeyCredentialRequestOptionsJSON: any discoverable passkey of this relying party. */
export function requestOptions(rp: RelyingParty, challenge: string) {
  return { challenge, rpId: rp.id, timeout: CHALLENGE_LIFETIME_MS, userVerification: "required", allowCredentials: [] };
}

/** A user handle: the uuid's bytes, base64url; it names no one outside this service. */
export const userHandle = (uuid: string) => base64url.encode(uuid);

const field = z.string().check(z.minLength(1), z.maxLength(MAX_FIELD));
const registrationSchema = z.object({
  id: field,
  type: z.literal("public-key"),
  response: z.object({
    clientDataJSON: field,
    attestationObject: field,
    transports: z.optional(z.array(z.string().check(z.maxLength(32))).check(z.maxLength(10))),
  }),
});
const assertionSchema = z.object({
  id: field,
  type: z.literal("public-key"),
  response: z.object({
    clientDataJSON: field,
    authenticatorData: field,
    signature: field,
    userHandle: z.optional(z.nullable(z.string().check(z.maxLength(MAX_FIELD)))),
  }),
});

export type PasskeyFailure =
  | "malformed"
  | "expired"
  | "replayed"
  | "wrong user"
  | "origin"
  | "relying party"
  | "user not verified"
  | "unsupported key"
  | "unknown"
  | "signature"
  | "counter";

class Refused extends Error {
  constructor(readonly reason: PasskeyFailure) {
    super(reason);
  }
}

export type NewPasskey = {
  id: string;
  publicKey: string;
  counter: number;
  backupEligible: boolean;
  backedUp: boolean;
  transports: string[];
};

/** Checks a registration (`credential`, the browser's JSON) against the page's challenge `ticket` for `userId`. */
export async function verifyRegistration(
  c: Context<AppEnv>,
  rp: RelyingParty,
  spendAt: string,
  ticket: string,
  credential: string,
  userId: number,
): Promise<{ outcome: "verified"; passkey: NewPasskey } | { outcome: "refused"; reason: PasskeyFailure }> {
  const checked = await refusals(async () => {
    const response = parsed(registrationSchema, credential);
    const challenge = await openChallenge(c.env, ticket, "register", userId, spendAt);
    const clientDataJSON = decoded(response.response.clientDataJSON);
    checkClientData(clientDataJSON, ClientDataType.Create, challenge, rp);
    const attestation = decoded(response.response.attestationObject);
    const { authData } = decodeCBORToNativeValueNoLeftoverBytes(attestation, 4) as { authData?: unknown };
    if (!(authData instanceof Uint8Array)) throw new Refused("malformed");
    const { authenticatorData } = parseAttestationObject(attestation);
    const flags = checkAuthenticatorData(authenticatorData, authData, rp);
    const registered = authenticatorData.credential;
    if (!registered || base64url.encode(registered.id) !== response.id) throw new Refused("malformed");
    const publicKey = await publicKeyJwk(registered.publicKey);
    return {
      outcome: "verified" as const,
      challenge,
      passkey: {
        id: response.id,
        publicKey: JSON.stringify(publicKey),
        counter: authenticatorData.signatureCounter,
        ...flags,
        transports: response.response.transports ?? [],
      },
    };
  });
  if (checked.outcome === "refused") return checked;
  const spent = await spend(c, spendAt, checked.challenge);
  return spent ?? { outcome: "verified", passkey: checked.passkey };
}

/** What a passkey is checked against: its stored key, counter and backup eligibility, and its user's handle. */
export type StoredPasskey = { publicKey: string; counter: number; backupEligible: boolean; userHandle: string };

/** The credential id an assertion names, to look its passkey up by; null for what is no assertion. */
export function assertedCredentialId(credential: string): string | null {
  try {
    return parsed(assertionSchema, credential).id;
  } catch {
    return null;
  }
}

/** Checks a sign-in (`credential`, the browser's JSON) against the page's challenge `ticket` and the passkey. */
export async function verifyAssertion(
  c: Context<AppEnv>,
  rp: RelyingParty,
  spendAt: string,
  ticket: string,
  credential: string,
  stored: StoredPasskey,
): Promise<
  { outcome: "verified"; counter: number; backedUp: boolean } | { outcome: "refused"; reason: PasskeyFailure }
> {
  const checked = await refusals(async () => {
    const response = parsed(assertionSchema, credential);
    const challenge = await openChallenge(c.env, ticket, "sign-in", null, spendAt);
    const clientDataJSON = decoded(response.response.clientDataJSON);
    checkClientData(clientDataJSON, ClientDataType.Get, challenge, rp);
    const authData = decoded(response.response.authenticatorData);
    const flags = checkAuthenticatorData(parseAuthenticatorData(authData), authData, rp);
    if (flags.backupEligible !== stored.backupEligible) throw new Refused("signature");
    const handle = response.response.userHandle;
    if (handle && !timingSafeEqual(handle, stored.userHandle)) throw new Refused("wrong user");
    const message = createAssertionSignatureMessage(authData, clientDataJSON);
    if (!(await signatureHolds(stored.publicKey, decoded(response.response.signature), message))) {
      throw new Refused("signature");
    }
    const counter = parseAuthenticatorData(authData).signatureCounter;
    // A counter that does not move on (where the authenticator keeps one) may be a cloned key.
    if ((counter !== 0 || stored.counter !== 0) && counter <= stored.counter) throw new Refused("counter");
    return { outcome: "verified" as const, challenge, counter, backedUp: flags.backedUp };
  });
  if (checked.outcome === "refused") return checked;
  const spent = await spend(c, spendAt, checked.challenge);
  return spent ?? { outcome: "verified", counter: checked.counter, backedUp: checked.backedUp };
}

/**
 * Runs checks that read only what the browser sent and the sealed challenge: no platform call, so
 * anything they throw beyond a refusal is a parser's error, and what was sent is malformed.
 */
async function refusals<T>(check: () => Promise<T>): Promise<T | { outcome: "refused"; reason: PasskeyFailure }> {
  try {
    return await check();
  } catch (error) {
    return { outcome: "refused", reason: error instanceof Refused ? error.reason : "malformed" };
  }
}

function parsed<T extends z.ZodMiniType>(schema: T, text: string): z.infer<T> {
  try {
    return schema.parse(JSON.parse(text));
  } catch {
    throw new Refused("malformed");
  }
}

function decoded(text: string): Uint8Array {
  try {
    return base64url.decode(text);
  } catch {
    throw new Refused("malformed");
  }
}

async function openChallenge(
  env: Bindings,
  ticket: string,
  purpose: ChallengePurpose,
  userId: number | null,
  clientId: string,
): Promise<Challenge> {
  let challenge: Challenge;
  try {
    challenge = challengeSchema.parse(JSON.parse(await openSecret(keyRing(env), ticket)));
  } catch {
    throw new Refused("expired");
  }
  if (challenge.purpose !== purpose || challenge.clientId !== clientId || Date.now() >= challenge.expiresAt) {
    throw new Refused("expired");
  }
  if (challenge.userId !== userId) throw new Refused("wrong user");
  return challenge;
}

/**
 * Spends the challenge once, in the RateLimiter of `spendAt` (the flow's client), as a code is
 * spent; a refusal when it was spent before or has expired there.
 */
async function spend(
  c: Context<AppEnv>,
  spendAt: string,
  challenge: Challenge,
): Promise<{ outcome: "refused"; reason: PasskeyFailure } | undefined> {
  const value = { key: `webauthn:${challenge.challenge}`, expiresAt: challenge.expiresAt, grant: null, reserve: false };
  const redeemed = await redeem(c, spendAt, value, async () => undefined);
  if (redeemed.outcome === "replayed") return { outcome: "refused", reason: "replayed" };
  if (redeemed.outcome === "expired") return { outcome: "refused", reason: "expired" };
  return undefined;
}

function checkClientData(json: Uint8Array, type: ClientDataType, challenge: Challenge, rp: RelyingParty): void {
  const clientData = parseClientDataJSON(json);
  if (clientData.type !== type) throw new Refused("malformed");
  if (!timingSafeEqual(base64url.encode(clientData.challenge), challenge.challenge)) throw new Refused("expired");
  if (clientData.origin !== rp.origin || clientData.crossOrigin === true) throw new Refused("origin");
}

function checkAuthenticatorData(
  data: ReturnType<typeof parseAuthenticatorData>,
  raw: Uint8Array,
  rp: RelyingParty,
): { backupEligible: boolean; backedUp: boolean } {
  if (!data.verifyRelyingPartyIdHash(rp.id)) throw new Refused("relying party");
  if (!data.userPresent || !data.userVerified) throw new Refused("user not verified");
  const flags = raw[32]!;
  const backupEligible = (flags & BACKUP_ELIGIBLE) !== 0;
  const backedUp = (flags & BACKED_UP) !== 0;
  // Backed up yet not eligible for backup: no authenticator says so (WebAuthn §6.1.3).
  if (backedUp && !backupEligible) throw new Refused("malformed");
  return { backupEligible, backedUp };
}

type PasskeyJwk = JsonWebKey & { alg: "ES256" | "EdDSA" | "RS256" };

/** The credential's COSE key as a JWK WebCrypto imports: ES256 (P-256), EdDSA (Ed25519) or RS256. */
async function publicKeyJwk(key: COSEPublicKey): Promise<PasskeyJwk> {
  const b64 = (value: bigint, length?: number) => {
    const bytes = bigIntBytes(value);
    const padded = length === undefined ? bytes : new Uint8Array(length);
    if (length !== undefined) padded.set(bytes, length - bytes.length);
    return base64url.encode(padded);
  };
  let jwk: PasskeyJwk;
  try {
    const algorithm = key.algorithm();
    if (algorithm === coseAlgorithmES256 && key.type() === COSEKeyType.EC2) {
      const { curve, x, y } = key.ec2();
      if (curve !== coseEllipticCurveP256) throw new Refused("unsupported key");
      jwk = { kty: "EC", crv: "P-256", x: b64(x, 32), y: b64(y, 32), alg: "ES256" };
    } else if (algorithm === coseAlgorithmEdDSA && key.type() === COSEKeyType.OKP) {
      const { curve, x } = key.okp();
      if (curve !== coseEllipticCurveEd25519) throw new Refused("unsupported key");
      jwk = { kty: "OKP", crv: "Ed25519", x: base64url.encode(x), alg: "EdDSA" };
    } else if (algorithm === coseAlgorithmRS256 && key.type() === COSEKeyType.RSA) {
      const { n, e } = key.rsa();
      jwk = { kty: "RSA", n: b64(n), e: b64(e), alg: "RS256" };
    } else {
      throw new Refused("unsupported key");
    }
  } catch (error) {
    if (error instanceof Refused) throw error;
    throw new Refused("unsupported key");
  }
  // A key WebCrypto will not take (a point off the curve) is refused now, not at every sign-in.
  try {
    await importKey(jwk);
  } catch {
    throw new Refused("unsupported key");
  }
  return jwk;
}

const IMPORT: Record<PasskeyJwk["alg"], Parameters<typeof crypto.subtle.importKey>[2]> = {
  ES256: { name: "ECDSA", namedCurve: "P-256" },
  EdDSA: { name: "Ed25519" },
  RS256: { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" },
};

function importKey(jwk: PasskeyJwk): Promise<CryptoKey> {
  return crypto.subtle.importKey("jwk", jwk, IMPORT[jwk.alg], false, ["verify"]);
}

async function signatureHolds(stored: string, signature: Uint8Array, message: Uint8Array): Promise<boolean> {
  const jwk = JSON.parse(stored) as PasskeyJwk;
  const key = await importKey(jwk);
  switch (jwk.alg) {
    case "ES256": {
      let raw: Uint8Array;
      try {
        // WebAuthn's ECDSA signatures are DER; WebCrypto takes r and s side by side.
        raw = decodePKIXECDSASignature(signature).encodeIEEEP1363(p256);
      } catch {
        return false;
      }
      return crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, key, raw, message);
    }
    case "EdDSA":
      return crypto.subtle.verify({ name: "Ed25519" }, key, signature, message);
    case "RS256":
      return crypto.subtle.verify({ name: "RSASSA-PKCS1-v1_5" }, key, signature, message);
  }
}
