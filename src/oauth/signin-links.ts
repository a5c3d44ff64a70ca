/**
 * Passwordless sign-in by e-mail: asking for a link (POST /api/2/signin, the login page) and
 * using one (GET and POST /oauth/signin). At most one link per address is live: a new one
 * replaces the last, a link works once, for 5 minutes (kv/signin-links.ts). Using a link signs the
 * browser in, proves the address (verified) and makes a user of an address that had none
 * (unverified, status 0). A link of the API connects the user to the client (the client's server
 * asked for it on the person's behalf); a link of the login page leaves that to the authorization
 * request it finishes, which asks for consent where the client needs it.
 */
import type { Context } from "hono";
import type { ClientRecord } from "../db/queries/clients";
import { claimUnownedMails } from "../db/queries/mails";
import { findClient } from "../db/queries/clients";
import {
  isLiveSigninRequest,
  replaceSigninRequest,
  spendSigninRequest,
  withdrawSigninRequest,
} from "../db/queries/signin-requests";
import { connectUser, findUserByEmail, insertSignedInUser, newUserId, recordLinkSignIn } from "../db/queries/users";
import { REFUSED_USER_STATUSES } from "../db/schema";
import type { AppEnv } from "../env";
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

/** A second link for the same address within this many seconds is refused (409): no mail bursts. */
const SIGNIN_RESEND_SECONDS = 10;
const MAX_TOKEN_LENGTH = 64;

export type LinkRequest = {
  client: ClientRecord;
  /** Canonical. */
  email: string;
  redirectUri: string;
  remember: boolean;
  context: string | null;
  locale: Locale;
  /** The login page's authorization request (its parameters), which the link finishes. */
  authorization?: Record<string, string>;
};

export type LinkRequestOutcome = "sent" | "blocked" | "refused" | "too_soon" | "not_sent";

export async function requestSignInLink(
  c: Context<AppEnv>,
  request: LinkRequest,
  now: number,
): Promise<LinkRequestOutcome> {
  const db = c.get("db")();
  const user = await findUserByEmail(db, request.email);
  const refusal = user && REFUSED_USER_STATUSES[user.status];
  if (refusal) return refusal === "blocked" ? "blocked" : "refused";
  const expires = now + SIGNIN_LINK_LIFETIME_SECONDS;
  const { token, tokenHash } = await newSignInToken(c.env);
  // D1 first: a request refused as too soon writes nothing to KV.
  const replaced = await replaceSigninRequest(
    db,
    { emailKey: request.email, tokenHash, created: now, expires },
    now - SIGNIN_RESEND_SECONDS,
  );
  if (!replaced) return "too_soon";
  await storeSignInLink(c.env, tokenHash, {
    email: request.email,
    clientId: request.client.id,
    redirectUri: request.redirectUri,
    remember: request.remember,
    context: request.context,
    locale: request.locale,
    expires,
    ...(request.authorization !== undefined && { authorization: request.authorization }),
  });

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
  const found = await findUnexpiredLink(c, token, now);
  if (found.outcome !== "live") return found;
  const live = await isLiveSigninRequest(c.get("db")(), found.link.email, found.tokenHash, now);
  return live ? found : { outcome: "spent" };
}

export type UsedLink =
  | { outcome: "used"; link: SignInLink; client: ClientRecord; userId: number }
  | { outcome: "invalid" | "expired" | "spent" };

/**
 * Uses a link: spent in D1 (once, and only while it is the address's live one), then the user
 * found or made, the address verified, earlier mails to the address given to the user and, for a
 * link of the API, the user connected to the client, in one batch.
 */
export async function useSignInLink(c: Context<AppEnv>, token: string, now: number): Promise<UsedLink> {
  const found = await findUnexpiredLink(c, token, now);
  if (found.outcome !== "live") return found;
  const { link, tokenHash } = found;
  const db = c.get("db")();
  if (!(await spendSigninRequest(db, link.email, tokenHash, now))) return { outcome: "spent" };
  const client = await findClient(db, link.clientId);
  if (!client) return { outcome: "invalid" };
  const connect = link.authorization === undefined;
  const connection = { clientId: client.id, merchantId: client.merchantId };
  const existing = await findUserByEmail(db, link.email);
  if (existing) {
    if (REFUSED_USER_STATUSES[existing.status]) return { outcome: "invalid" };
    await db.batch([
      ...recordLinkSignIn(db, existing.id, link.email, now),
      claimUnownedMails(db, existing.id, link.email),
      ...(connect ? [connectUser(db, { ...connection, userId: existing.id })] : []),
    ]);
    return { outcome: "used", link, client, userId: existing.id };
  }
  const uuid = crypto.randomUUID();
  const [user, created] = insertSignedInUser(db, { uuid, email: link.email, now });
  const [[inserted]] = await db.batch([
    user,
    created,
    claimUnownedMails(db, newUserId(uuid), link.email),
    ...(connect ? [connectUser(db, { ...connection, userId: newUserId(uuid) })] : []),
  ]);
  return { outcome: "used", link, client, userId: inserted!.id };
}

async function findUnexpiredLink(c: Context<AppEnv>, token: string, now: number): Promise<LinkState> {
  const found = token.length <= MAX_TOKEN_LENGTH ? await findSignInLink(c.env, token) : null;
  if (!found) return { outcome: "invalid" };
  if (found.link.expires <= now) return { outcome: "expired" };
  return { outcome: "live", ...found };
}
