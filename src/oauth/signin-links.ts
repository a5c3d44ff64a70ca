/**
 * Passwordless sign-in by e-mail: asking for a link (POST /api/2/signin, the login page) and
 * using one (GET and POST /oauth/signin). At most one link per user is live (per address for an
 * address without a user): a new one replaces the last, a link works once, for 5 minutes
 * (kv/signin-links.ts). Only an address that may prove the account gets a link for it: the
 * user's primary address, or one verified (docs/security.md). Using a link signs the browser in,
 * proves the address (verified) and makes a user of an address that had none (unverified, status
 * 0); then it finishes the authorization request the link carries (the login page's own, or one
 * made for a link of the API), which asks for consent where the client needs it, so a link never
 * connects a user to a client the user has not approved.
 */
import type { Context } from "hono";
import type { Database } from "../db/client";
import type { ClientRecord } from "../db/queries/clients";
import { claimUnownedMails } from "../db/queries/mails";
import { findClient } from "../db/queries/clients";
import {
  isLiveSigninRequest,
  replaceSigninRequest,
  spendSigninRequest,
  withdrawSigninRequest,
} from "../db/queries/signin-requests";
import {
  type AddressOwner,
  findAddressOwner,
  insertSignedInUser,
  newUserId,
  recordLinkSignIn,
} from "../db/queries/users";
import { REFUSED_USER_STATUSES } from "../db/schema";
import type { AppEnv, Bindings } from "../env";
import {
  findSignInLink,
  newSignInToken,
  SIGNIN_LINK_LIFETIME_SECONDS,
  type SignInLink,
  storeSignInLink,
} from "../kv/signin-links";
import { sendMail } from "../mail/mailer";
import type { Locale } from "../pages/locale";
import { SIGNIN_MAIL } from "../pages/messages";
import { isRegisteredRedirectUri } from "./redirect-uri";
import { emailLookupKey } from "../schemas/email-address";

/**
 * A second link for the same user within this many seconds is refused (409): no mail bursts, and
 * a stranger asking again and again for someone's link cannot replace it before its owner has had
 * a minute to open it.
 */
const SIGNIN_RESEND_SECONDS = 60;
const MAX_TOKEN_LENGTH = 64;

export type LinkRequest = {
  client: ClientRecord;
  /** Canonical. */
  email: string;
  redirectUri: string;
  remember: boolean;
  context: string | null;
  locale: Locale;
  /**
   * The authorization request the link finishes when used: the login page's own, or for a link of
   * POST /api/2/signin one made for it (linkAuthorization).
   */
  authorization: Record<string, string>;
};

/** The authorization request a link of POST /api/2/signin finishes: a code for the client, at `redirectUri`. */
export function linkAuthorization(clientId: string, redirectUri: string): Record<string, string> {
  return { client_id: clientId, redirect_uri: redirectUri, response_type: "code" };
}

/** `unverified`: the address is a user's, neither primary nor verified, so it gets no link. */
export type LinkRequestOutcome = "sent" | "blocked" | "refused" | "unverified" | "too_soon" | "not_sent";

export async function requestSignInLink(
  env: Bindings,
  db: Database,
  request: LinkRequest,
  now: number,
): Promise<LinkRequestOutcome> {
  const owner = await findAddressOwner(db, request.email);
  if (owner) {
    const refusal = REFUSED_USER_STATUSES[owner.user.status];
    if (refusal) return refusal === "blocked" ? "blocked" : "refused";
    if (!mayProveAccount(owner)) return "unverified";
  }
  const subject = linkSubject(owner?.user.id, request.email);
  const expires = now + SIGNIN_LINK_LIFETIME_SECONDS;
  const { token, tokenHash } = await newSignInToken(env);
  // KV first, then the row that makes the link live: once the row is written nothing but the mail
  // is left, so a retry of a request that failed before it starts afresh, and one that failed
  // after it is too soon and mails nothing twice. A request refused as too soon leaves a KV record
  // no row points to, gone with its TTL.
  await storeSignInLink(env, tokenHash, {
    subject,
    email: request.email,
    clientId: request.client.id,
    redirectUri: request.redirectUri,
    remember: request.remember,
    context: request.context,
    locale: request.locale,
    expires,
    authorization: request.authorization,
  });
  const replaced = await replaceSigninRequest(
    db,
    { subject, tokenHash, created: now, expires },
    now - SIGNIN_RESEND_SECONDS,
  );
  if (!replaced) return "too_soon";

  const mail = SIGNIN_MAIL[request.locale];
  const url = `${env.BASE_URL}/oauth/signin?token=${token}`;
  const sent = await sendMail(
    env,
    db,
    {
      template: "signin",
      to: { email: request.email, name: owner?.user.displayName ?? null, userId: owner?.user.id ?? null },
      subject: mail.subject(request.client.name),
      text: mail.text(request.client.name, url, request.context),
    },
    now,
  );
  if (sent) return "sent";
  await withdrawSigninRequest(db, subject, tokenHash);
  return "not_sent";
}

export type LinkState =
  | { outcome: "live"; link: SignInLink; client: ClientRecord; userId: number | null }
  | { outcome: "invalid" | "expired" | "spent" };

/**
 * What a link is now, without using it (the confirmation page): with the client that asked for it
 * and the user it signs in (null for an address that has none yet).
 */
export async function inspectSignInLink(c: Context<AppEnv>, token: string, now: number): Promise<LinkState> {
  const found = await findUnexpiredLink(c, token, now);
  if (found.outcome !== "live") return found;
  const db = c.get("db")();
  const [live, parties] = await Promise.all([
    isLiveSigninRequest(db, found.link.subject, found.tokenHash, now),
    linkParties(db, found.link),
  ]);
  if (!parties) return { outcome: "invalid" };
  if (!live) return { outcome: "spent" };
  return { outcome: "live", link: found.link, client: parties.client, userId: parties.owner?.user.id ?? null };
}

export type UsedLink =
  | { outcome: "used"; link: SignInLink; userId: number; merchantId: number }
  | { outcome: "invalid" | "expired" | "spent" };

/**
 * Uses a link, when it can still sign in (linkParties; else it is left unspent): spent in D1
 * (once, and only while it is its subject's live one), then the user found or made, the address
 * verified and earlier mails to the address given to the user, in one batch.
 */
export async function useSignInLink(c: Context<AppEnv>, token: string, now: number): Promise<UsedLink> {
  const found = await findUnexpiredLink(c, token, now);
  if (found.outcome !== "live") return found;
  const { link, tokenHash } = found;
  const db = c.get("db")();
  const parties = await linkParties(db, link);
  if (!parties) return { outcome: "invalid" };
  if (!(await spendSigninRequest(db, link.subject, tokenHash, now))) return { outcome: "spent" };
  const { client, owner } = parties;
  if (owner) {
    await db.batch([
      ...recordLinkSignIn(db, owner.user.id, link.email, now),
      claimUnownedMails(db, owner.user.id, link.email),
    ]);
    return { outcome: "used", link, userId: owner.user.id, merchantId: client.merchantId };
  }
  const uuid = crypto.randomUUID();
  const [user, created] = insertSignedInUser(db, { uuid, email: link.email, now });
  const [[inserted]] = await db.batch([user, created, claimUnownedMails(db, newUserId(uuid), link.email)]);
  return { outcome: "used", link, userId: inserted!.id, merchantId: client.merchantId };
}

/**
 * The link's client and the owner of its address as they are now, when the link can still sign
 * in: the client still has the link's redirect URI, and the address is still the user's the link
 * was made for (or still nobody's), allowed to sign in and one that may prove the account.
 */
async function linkParties(
  db: Database,
  link: SignInLink,
): Promise<{ client: ClientRecord; owner: AddressOwner | undefined } | null> {
  const [client, owner] = await Promise.all([findClient(db, link.clientId), findAddressOwner(db, link.email)]);
  if (!client || !isRegisteredRedirectUri(client.redirectUris, link.redirectUri)) return null;
  if (linkSubject(owner?.user.id, link.email) !== link.subject) return null;
  if (owner && (REFUSED_USER_STATUSES[owner.user.status] || !mayProveAccount(owner))) return null;
  return { client, owner };
}

/**
 * Whom a link signs in, and so which one link is live: the user, whichever of their addresses it
 * went to, or an address without a user.
 */
function linkSubject(userId: number | undefined, email: string): string {
  return userId === undefined ? `email:${emailLookupKey(email)}` : `user:${userId}`;
}

/**
 * A link to an address signs in as whoever owns it, so only an address that stands for the
 * account gets one: the primary address, or one the user has verified. An unverified secondary
 * address may be someone else's mailbox.
 */
function mayProveAccount(address: { primary: boolean; verified: boolean }): boolean {
  return address.primary || address.verified;
}

type FoundLink = { outcome: "live"; link: SignInLink; tokenHash: string } | { outcome: "invalid" | "expired" };

async function findUnexpiredLink(c: Context<AppEnv>, token: string, now: number): Promise<FoundLink> {
  const found = token.length <= MAX_TOKEN_LENGTH ? await findSignInLink(c.env, token) : null;
  if (!found) return { outcome: "invalid" };
  if (found.link.expires <= now) return { outcome: "expired" };
  return { outcome: "live", ...found };
}
