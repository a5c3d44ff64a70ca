/**
 * Signing in with a passkey, and adding one (docs/factors.md): the pages' side of webauthn.ts.
 * A passkey is a first factor that counts as two (the device, and its PIN or biometric), so a
 * sign-in with one needs no second factor. The challenge is spent in the RateLimiter of the client
 * the page is for.
 */
import type { Context } from "hono";
import type { Database } from "../../db/client";
import { violatesUnique } from "../../db/constraints";
import { findPasskey, insertPasskey, listPasskeys, recordPasskeyUse } from "../../db/queries/passkeys";
import { REFUSED_USER_STATUSES } from "../../db/schema";
import type { AppEnv, Bindings } from "../../env";
import { auditEntry, recordSignInFailure, type SignInClient } from "../../events/audit";
import {
  assertedCredentialId,
  creationOptions,
  newChallenge,
  type PasskeyFailure,
  relyingParty,
  requestOptions,
  userHandle,
  verifyAssertion,
  verifyRegistration,
} from "./webauthn";

/** What a page needs to offer a passkey: the options for the browser (JSON) and the sealed challenge. */
export type PasskeyPrompt = { options: string; challenge: string };

/**
 * A sign-in page's passkey prompt, for a page of `clientId`'s: any discoverable passkey; none where
 * BASE_URL can have no passkeys.
 */
export async function signInPrompt(env: Bindings, clientId: string): Promise<PasskeyPrompt | undefined> {
  const rp = relyingParty(env);
  if (!rp) return undefined;
  const { challenge, ticket } = await newChallenge(env, "sign-in", null, clientId);
  return { options: JSON.stringify(requestOptions(rp, challenge)), challenge: ticket };
}

/** The prompt that adds a passkey for the user, excluding the authenticators that hold one already. */
export async function registrationPrompt(
  env: Bindings,
  db: Database,
  user: { id: number; uuid: string; email: string },
  clientId: string,
): Promise<PasskeyPrompt | undefined> {
  const rp = relyingParty(env);
  if (!rp) return undefined;
  const [{ challenge, ticket }, existing] = await Promise.all([
    newChallenge(env, "register", user.id, clientId),
    listPasskeys(db, user.id),
  ]);
  const options = creationOptions(rp, { handle: userHandle(user.uuid), name: user.email }, challenge, existing);
  return { options: JSON.stringify(options), challenge: ticket };
}

export type PasskeySignIn =
  | { outcome: "signed_in"; userId: number; method: "hwk" | "swk" }
  | { outcome: "refused"; reason: PasskeyFailure | "account" };

/** Signs in with the passkey the browser's `credential` (an assertion, JSON) was made with. */
export async function signInWithPasskey(
  c: Context<AppEnv>,
  client: SignInClient,
  challenge: string,
  credential: string,
  now: number,
): Promise<PasskeySignIn> {
  const rp = relyingParty(c.env);
  const id = assertedCredentialId(credential);
  if (!rp || id === null) return { outcome: "refused", reason: "malformed" };
  const db = c.get("db")();
  const found = await findPasskey(db, id);
  if (!found) return { outcome: "refused", reason: "unknown" };
  const { passkey } = found;
  const stored = { ...passkey, userHandle: userHandle(found.uuid) };
  const verified = await verifyAssertion(c, rp, client.id, challenge, credential, stored);
  if (verified.outcome === "refused") {
    // Expired or spent pages are no attack on the account; anything else is recorded.
    if (verified.reason !== "expired" && verified.reason !== "replayed") {
      recordSignInFailure(c, client, passkey.userId, verified.reason, now, "passkey");
    }
    return verified;
  }
  if (REFUSED_USER_STATUSES[found.status]) return { outcome: "refused", reason: "account" };
  // Of two sign-ins racing with one counter value, one counts: the other is refused as a clone would be.
  if (!(await recordPasskeyUse(db, passkey, { ...verified, now }))) return { outcome: "refused", reason: "counter" };
  return { outcome: "signed_in", userId: passkey.userId, method: passkey.backupEligible ? "swk" : "hwk" };
}

/** Adds the passkey the browser's `credential` (a registration, JSON) made, named `name`, for `userId`. */
export async function addPasskey(
  c: Context<AppEnv>,
  client: SignInClient,
  userId: number,
  added: { challenge: string; credential: string; name: string },
  now: number,
): Promise<{ outcome: "added" | "added already" } | { outcome: "refused"; reason: PasskeyFailure }> {
  const rp = relyingParty(c.env);
  if (!rp) return { outcome: "refused", reason: "relying party" };
  const verified = await verifyRegistration(c, rp, client.id, added.challenge, added.credential, userId);
  if (verified.outcome === "refused") return verified;
  const db = c.get("db")();
  const owner = { userId, clientId: client.id, merchantId: client.merchantId };
  try {
    await db.batch([
      insertPasskey(db, { ...verified.passkey, ...owner, name: added.name, created: now }),
      auditEntry(
        c,
        { actor: "user", clientId: client.id, merchantId: client.merchantId },
        { action: "user.passkey.add", userId },
        now,
      ),
    ]);
  } catch (error) {
    if (violatesUnique(error, "passkeys.id")) return { outcome: "added already" };
    throw error;
  }
  return { outcome: "added" };
}
