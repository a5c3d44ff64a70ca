/**
 * The tickets of the pages that act for a signed-in browser within one authorization request. The
 * consent page's (`consent`) and the second-factor pages' (`factor`) are taken only from a page
 * this service showed after it knew the user for that client in this browser: a login or a
 * sign-in link in the flow itself, or a single sign-on pass-through. A ticket is the keyed hash of
 * its purpose, the browser's session id and the client; a login page carries none, so a browser
 * signed in elsewhere cannot post `approve` (or a second factor) to another client's login page
 * and skip the password.
 */
import type { Context } from "hono";
import type { AppEnv } from "../env";
import { hashSecret, keyRing, macMatches } from "../security/data-protection";

export type TicketPurpose = "consent" | "factor";

export function flowTicket(
  c: Context<AppEnv>,
  purpose: TicketPurpose,
  sessionHash: string,
  clientId: string,
): Promise<string> {
  return hashSecret(c.env.DATA_PROTECTION_KEY, ticketText(purpose, sessionHash, clientId));
}

const ticketText = (purpose: TicketPurpose, sessionHash: string, clientId: string) =>
  `${purpose}:${sessionHash}:${clientId}`;

export async function flowTicketValid(
  c: Context<AppEnv>,
  purpose: TicketPurpose,
  sessionHash: string,
  clientId: string,
  presented: string | null,
): Promise<boolean> {
  return presented !== null && macMatches(keyRing(c.env), ticketText(purpose, sessionHash, clientId), presented);
}
