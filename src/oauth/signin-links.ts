/**
 * Passwordless sign-in by e-mail: asking for a link (POST /api/2/signin, the login page) and
 * using one (GET and POST /oauth/signin). At most one link per address is live: a new one
 * replaces the last, a link works once, for 5 minutes (kv/signin-links.ts). Using a link signs the
 * browser in, proves the address (verified), makes a user of an address that had none (unverified,
 * status 0), connects the user to the client and sends the browser to the link's redirect URI with
 * an authorization code.
 */
import type { Context } from "hono";
import type { ClientRecord } from "../db/queries/clients";
import { claimUnownedMails } from "../db/queries/mails";
import {
  isLiveSigninRequest,
  replaceSigninRequest,
  spendSigninRequest,
  withdrawSigninRequest,
} from "../db/queries/signin-requests";
import { connectUser, findUserByEmail, insertSignedInUser, newUserId, recordLinkSignIn } from "../db/queries/users";
import type { AppEnv } from "../env";
import { findSignInLink, SIGNIN_LINK_LIFETIME_SECONDS, type SignInLink, storeSignInLink } from "../kv/signin-links";
import { sendMail } from "../mail/mailer";
import type { Locale } from "../pages/locale";
import { SIGNIN_MAIL } from "../pages/messages";

/** A second link for the same address within this many seconds is refused (409): no mail bursts. */
export const SIGNIN_RESEND_SECONDS = 10;
const MAX_TOKEN_LENGTH = 64;

export type LinkRequest = {
  client: ClientRecord;
  /** Canonical. */
  email: string;
  redirectUri: string;
  remember: boolean;
  context: string | null;
  locale: Locale;
  state?: string | undefined;
  codeChallenge?: string | undefined;
};

export type LinkRequestOutcome = "sent" | "blocked" | "refused" | "too_soon" | "not_sent";

export async function requestSignInLink(
  c: Context<AppEnv>,
  request: LinkRequest,
  now: number,
): Promise<LinkRequestOutcome> {
  const db = c.get("db");
  const user = await findUserByEmail(db, request.email);
  if (user?.status === -2) return "blocked";
  if (user && user.status < 0) return "refused";
  const link: SignInLink = {
    email: request.email,
    clientId: request.client.id,
    redirectUri: request.redirectUri,
    remember: request.remember,
    context: request.context,
    locale: request.locale,
    expires: now + SIGNIN_LINK_LIFETIME_SECONDS,
    ...(request.state !== undefined && { state: request.state }),
    ...(request.codeChallenge !== undefined && { codeChallenge: request.codeChallenge }),
  };
  const { token, tokenHash } = await storeSignInLink(c.env, link);
  const replaced = await replaceSigninRequest(
    db,
    { emailKey: request.email, tokenHash, created: now, expires: link.expires },
    now - SIGNIN_RESEND_SECONDS,
  );
  if (!replaced) return "too_soon";

  const mail = SIGNIN_MAIL[request.locale];
  const url = `${c.env.BASE_URL}/oauth/signin?token=${token}`;
  const sent = await sendMail(
    c,
    {
      template: "signin",
      to: { email: request.email, name: user?.displayName ?? null, userId: user?.id ?? null },
      subject: mail.subject(request.client.name),
      text: mail.text(request.client.name, url, request.context),
    },
    now,
  );
  if (sent) return "sent";
  await withdrawSigninRequest(db, request.email, tokenHash);
  return "not_sent";
}

export type LinkState =
  { outcome: "live"; link: SignInLink; tokenHash: string } | { outcome: "invalid" | "expired" | "spent" };

/** What a link is now, without using it (the confirmation page). */
export async function inspectSignInLink(c: Context<AppEnv>, token: string, now: number): Promise<LinkState> {
  const found = token.length <= MAX_TOKEN_LENGTH ? await findSignInLink(c.env, token) : null;
  if (!found) return { outcome: "invalid" };
  if (found.link.expires <= now) return { outcome: "expired" };
  if (!(await isLiveSigninRequest(c.get("db"), found.link.email, found.tokenHash, now))) return { outcome: "spent" };
  return { outcome: "live", ...found };
}

export type UsedLink =
  { outcome: "used"; link: SignInLink; userId: number } | { outcome: "invalid" | "expired" | "spent" };

/**
 * Uses a link: spent in D1 (once, and only while it is the address's live one), then the user
 * found or made, the address verified, the user connected to the client and earlier mails to the
 * address given to the user, in one batch.
 */
export async function useSignInLink(
  c: Context<AppEnv>,
  token: string,
  client: (id: string) => Promise<ClientRecord | undefined>,
  now: number,
): Promise<UsedLink> {
  const state = await inspectSignInLink(c, token, now);
  if (state.outcome !== "live") return state;
  const { link, tokenHash } = state;
  const db = c.get("db");
  if (!(await spendSigninRequest(db, link.email, tokenHash, now))) return { outcome: "spent" };
  const target = await client(link.clientId);
  if (!target) return { outcome: "invalid" };
  const connection = { clientId: target.id, merchantId: target.merchantId };
  const existing = await findUserByEmail(db, link.email);
  if (existing) {
    if (existing.status < 0) return { outcome: "invalid" };
    await db.batch([
      ...recordLinkSignIn(db, existing.id, link.email, now),
      connectUser(db, { ...connection, userId: existing.id }),
      claimUnownedMails(db, existing.id, link.email),
    ]);
    return { outcome: "used", link, userId: existing.id };
  }
  const uuid = crypto.randomUUID();
  const userId = newUserId(uuid);
  await db.batch([
    ...insertSignedInUser(db, { uuid, email: link.email, now }),
    connectUser(db, { ...connection, userId }),
    claimUnownedMails(db, userId, link.email),
  ]);
  const created = await findUserByEmail(db, link.email);
  return created ? { outcome: "used", link, userId: created.id } : { outcome: "invalid" };
}
