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

/** What a valid hint says: its user, its client, and the browser session it was issued in. */
export type IdTokenHint = { sub: string; clientId: string; sid: string | null };

/** The hint, when it is an ID token of ours (for `clientId`, when given); null for anything else. */
export async function verifiedIdTokenHint(env: Bindings, hint: string, clientId?: string): Promise<IdTokenHint | null> {
  if (hint.length > MAX_TOKEN_LENGTH) return null;
  try {
    const { payload } = await verifyOwnToken(env, hint, {
      typ: "JWT",
      ...(clientId !== undefined && { audience: clientId }),
      clockTolerance: EXPIRY_IGNORED,
    });
    const { sub, aud, sid } = payload;
    if (typeof sub !== "string" || typeof aud !== "string") return null;
    return { sub, clientId: aud, sid: typeof sid === "string" ? sid : null };
  } catch (err) {
    if (err instanceof joseErrors.JOSEError) return null;
    throw err;
  }
}
