/**
 * The consent page's ticket. Approval (`action=approve`, and `deny`) is taken only from a consent
 * page this service showed after it knew the user for that client in this browser: a login or a
 * sign-in link in the flow itself, or a single sign-on pass-through. The page carries the keyed
 * hash of the browser's session id and the client; a login page carries none, so a browser signed
 * in elsewhere cannot post `approve` to another client's login page and skip the password.
 */
import type { Context } from "hono";
import type { AppEnv } from "../env";
import { hashSecret, keyRing, macMatches } from "../security/data-protection";

export function consentTicket(c: Context<AppEnv>, sessionHash: string, clientId: string): Promise<string> {
  return hashSecret(c.env.DATA_PROTECTION_KEY, consentText(sessionHash, clientId));
}

const consentText = (sessionHash: string, clientId: string) => `consent:${sessionHash}:${clientId}`;

export async function consentTicketValid(
  c: Context<AppEnv>,
  sessionHash: string,
  clientId: string,
  presented: string | null,
): Promise<boolean> {
  return presented !== null && macMatches(keyRing(c.env), consentText(sessionHash, clientId), presented);
}
