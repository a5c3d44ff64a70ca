/**
 * `id_token_hint` (Core §3.1.2.1, RP-Initiated Logout §2): an ID token this service issued to the
 * client, naming the user the client believes is signed in. Its signature, issuer and audience
 * must hold; its expiry need not, since a client sends the last ID token it got, which is often
 * expired by then.
 */
import { errors as joseErrors } from "jose";
import type { Bindings } from "../../env";
import { MAX_TOKEN_LENGTH, verifyOwnToken } from "../tokens";

/** A clock tolerance (seconds) past any ID token's expiry: a century. */
const EXPIRY_IGNORED = 100 * 365 * 24 * 3600;

/** The subject of a valid hint for `clientId`, or null for anything else. */
export async function idTokenHintSubject(env: Bindings, hint: string, clientId: string): Promise<string | null> {
  if (hint.length > MAX_TOKEN_LENGTH) return null;
  try {
    const { payload } = await verifyOwnToken(env, hint, {
      typ: "JWT",
      audience: clientId,
      clockTolerance: EXPIRY_IGNORED,
    });
    return typeof payload.sub === "string" ? payload.sub : null;
  } catch (err) {
    if (err instanceof joseErrors.JOSEError) return null;
    throw err;
  }
}
