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
 *
 * A storage call may fail, or land and lose its answer (docs/reliability.md). Asking: the link's
 * row is written before the mail and marked mailed in the mail's record; a link whose mail did
 * not go out is withdrawn, so the client's retry works at once, and one whose mail went out is
 * answered as sent whatever its record meets. A mailed row holds the next request back for the
 * minute, an unmailed one only while its mail may still be going out. Using: the row is claimed
 * for the browser that confirms it, which may try again until its answer is out.
 */
import type { Context } from "hono";
import type { Database } from "../db/client";
import { violatesUnique } from "../db/constraints";
import type { ClientRecord } from "../db/queries/clients";
import { claimUnownedMails } from "../db/queries/mails";
import { findClient } from "../db/queries/clients";
import {
  claimSigninRequest,
  heldSigninRequestHash,
  markSigninRequestMailed,
  replaceSigninRequest,
  withdrawSigninRequest,
} from "../db/queries/signin-requests";
import {
  type AddressOwner,
  findAddressOwner,
  insertSignedInUser,
  makePrimaryEmail,
  newUserId,
  recordLinkSignIn,
} from "../db/queries/users";
import { callbackChangeRows } from "../db/queries/callbacks";
import { wakeSchedules } from "../events/callbacks";
import { REFUSED_USER_STATUSES } from "../db/schema";
import type { AppEnv, Bindings } from "../env";
import { logUnlessPlatformFault, platformFaultOf } from "../errors";
import { nowInSeconds } from "../http/datetime";
import {
  findSignInLink,
  newSignInToken,
  SIGNIN_LINK_LIFETIME_SECONDS,
  type SignInLink,
  storeSignInLink,
} from "../kv/signin-links";
import { MAIL_SENDING_SECONDS, sendMail } from "../mail/mailer";
import { CALL_DEADLINE_MS } from "../platform/calls";
import type { Locale } from "../pages/locale";
import { RESET_MAIL, SIGNIN_MAIL } from "../pages/messages";
import { clientWayBack } from "./authorization-response";
import { isRegisteredRedirectUri } from "./redirect-uri";
import { emailLookupKey } from "../schemas/email-address";
import type { SignUpProfile } from "../schemas/sign-up";
import { hashSecret } from "../security/data-protection";

/**
 * A second link for the same user within this many seconds of the last one's mail is refused
 * (409): no mail bursts, and a stranger asking again and again for someone's link cannot replace
 * it before its owner has had a minute to open it.
 */
const SIGNIN_RESEND_SECONDS = 60;
/**
 * A row not yet marked mailed holds a new request back (503 with Retry-After) only while its mail
 * may still be being sent: else two requests at once would both mail. It is counted from just
 * before the row's write (its `created`): that write, the mail and its record, and a second more
 * as `created` is in whole seconds. A retry cannot be told from another request, so a request
 * that fails before its mail went out withdraws its row (withdrawInBackground): a retry after any
 * one fault works at once; only a request that died without a word, or failed twice over, holds
 * the next back, for those seconds at most.
 */
const UNMAILED_HOLD_SECONDS = Math.ceil(CALL_DEADLINE_MS / 1000) + MAIL_SENDING_SECONDS + 1;
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
  /** The link confirms the address as this user's new primary one (kv/signin-links.ts). */
  confirms?: { userId: number };
  /** The link sets a new password: only an existing user's address gets one. */
  resetsPassword?: boolean;
  /** The sign-up view's profile, for the account the link makes (none for an address that has one). */
  profile?: SignUpProfile;
};

/** The authorization request a link of POST /api/2/signin finishes: a code for the client, at `redirectUri`. */
export function linkAuthorization(clientId: string, redirectUri: string): Record<string, string> {
  return { client_id: clientId, redirect_uri: redirectUri, response_type: "code" };
}

/**
 * Where work that must not hold the answer back runs: the request's `waitUntil`, or the queue
 * consumer's batch.
 */
export type Background = Pick<ExecutionContext, "waitUntil">;

/**
 * `unverified`: the address is a user's, neither primary nor verified, so it gets no link.
 * `sending`: the user's last link is still being mailed; ask again in `retryAfter` seconds.
 */
export type LinkRequestOutcome =
  | { outcome: "sent" | "blocked" | "refused" | "unverified" | "too_soon" | "not_sent" }
  | { outcome: "sending"; retryAfter: number };

/**
 * Makes and mails a link, unless the address gets none or its subject's last link holds. `now`:
 * when it was asked for; the link's lifetime and its mail count from it.
 */
export async function requestSignInLink(
  env: Bindings,
  db: Database,
  request: LinkRequest,
  now: number,
  background: Background,
): Promise<LinkRequestOutcome> {
  const owner = await findAddressOwner(db, request.email);
  if (owner) {
    const refusal = REFUSED_USER_STATUSES[owner.user.status];
    if (refusal) return { outcome: refusal === "blocked" ? "blocked" : "refused" };
    if (!mayProveAccount(owner) && request.confirms === undefined) return { outcome: "unverified" };
  }
  // A confirming link goes only to an address of the user it confirms for; a reset, to a user's.
  if (request.confirms && owner?.user.id !== request.confirms.userId) return { outcome: "refused" };
  if (request.resetsPassword && !owner) return { outcome: "refused" };
  const subject = linkSubject(owner?.user.id, request.email);
  const expires = now + SIGNIN_LINK_LIFETIME_SECONDS;
  const { token, tokenHash } = await newSignInToken(env);
  // KV first, then the row that makes the link live: a request refused as too soon leaves a KV
  // record no row points to, gone with its TTL.
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
    ...(request.confirms && { confirms: "email" as const }),
    ...(request.resetsPassword && { resets: "password" as const }),
    ...(request.profile && !owner && { profile: request.profile }),
  });
  const created = nowInSeconds();
  try {
    const held = await replaceSigninRequest(
      db,
      { subject, tokenHash, created, expires },
      { mailedAfter: created - SIGNIN_RESEND_SECONDS, madeAfter: created - UNMAILED_HOLD_SECONDS },
    );
    if (held?.mailed === null) {
      return { outcome: "sending", retryAfter: Math.max(1, held.created + UNMAILED_HOLD_SECONDS - created) };
    }
    if (held) return { outcome: "too_soon" };

    const mail = (request.resetsPassword ? RESET_MAIL : SIGNIN_MAIL)[request.locale];
    const url = `${env.BASE_URL}/oauth/signin?token=${token}`;
    const sent = await sendMail(
      env,
      db,
      {
        template: request.resetsPassword ? "password-reset" : "signin",
        clientId: request.client.id,
        to: { email: request.email, name: owner?.user.displayName ?? null, userId: owner?.user.id ?? null },
        subject: mail.subject(request.client.name),
        text: mail.text(request.client.name, url, request.context),
      },
      now,
      {
        whenSent: [markSigninRequestMailed(db, subject, tokenHash, now)],
        whenFailed: [withdrawSigninRequest(db, subject, tokenHash)],
      },
    );
    return { outcome: sent ? "sent" : "not_sent" };
  } catch (err) {
    // The row's write or the failed mail's record: nothing went out (sendMail throws only then).
    withdrawInBackground(background, db, subject, tokenHash);
    throw err;
  }
}

/**
 * Withdraws the row of a request that failed before its mail went out (its write may have landed
 * with its answer lost), so that it holds no retry back as a link being mailed. In the background:
 * a stalled D1 costs the answer one deadline, not two. Not withdrawn, the row holds the next
 * request for UNMAILED_HOLD_SECONDS at most.
 */
function withdrawInBackground(background: Background, db: Database, subject: string, tokenHash: string) {
  background.waitUntil(
    withdrawSigninRequest(db, subject, tokenHash).catch((err: unknown) =>
      logUnlessPlatformFault("sign-in link's row not withdrawn", err),
    ),
  );
}

export type LinkState =
  | { outcome: "live"; link: SignInLink; client: ClientRecord; userId: number | null; secondFactor: boolean }
  | { outcome: "invalid" | "expired" | "spent" };

/**
 * What a link is now, without using it (the confirmation page): with the client that asked for it
 * and the user it signs in (null for an address that has none yet). `claim` (signInClaim): this
 * browser's, so that a link it started using and may finish shows as live to it.
 */
export async function inspectSignInLink(
  c: Context<AppEnv>,
  token: string,
  claim: string | null,
  now: number,
): Promise<LinkState> {
  const standing = await linkStanding(c, token, claim, now);
  if (standing.outcome !== "usable") return standing;
  const { link, parties } = standing;
  const owner = parties.owner;
  return {
    outcome: "live",
    link,
    client: parties.client,
    userId: owner?.user.id ?? null,
    secondFactor: owner?.secondFactor ?? false,
  };
}

export type UsedLink =
  | {
      outcome: "used";
      link: SignInLink;
      userId: number;
      merchantId: number;
      /** Whether the user has a second factor to give next (a user the link made has none). */
      secondFactor: boolean;
      done: () => Promise<void>;
    }
  | { outcome: "invalid" | "expired" | "spent" };

/**
 * What this browser's use of a link is known by: the link's token and the browser's CSRF token
 * (checked against its cookie before any use), hashed. A link's row holds it once the browser
 * has started using the link (claimSigninRequest).
 */
export function signInClaim(env: Bindings, token: string, csrf: string): Promise<string> {
  return hashSecret(env.DATA_PROTECTION_KEY, `signin-claim:${token}:${csrf}`);
}

/**
 * Uses a link, when it can still sign in (else it is left unspent): its row is claimed for this
 * browser (`claim`), once, and only while it is its subject's live link; then the user is found
 * or made, the address verified and earlier mails to the address given to the user. Every step
 * is safe to repeat, so the browser may try again whatever failed (a lost answer included) until
 * `done` is called, when its use has been answered: then the claim goes and nothing can use the
 * link again.
 */
export async function useSignInLink(c: Context<AppEnv>, token: string, claim: string, now: number): Promise<UsedLink> {
  const standing = await linkStanding(c, token, claim, now);
  if (standing.outcome !== "usable") return standing;
  const { link, tokenHash, parties } = standing;
  const db = c.get("db")();
  if (!(await claimSigninRequest(db, link.subject, tokenHash, claim, now))) return { outcome: "spent" };
  const { userId, told } = await signInUser(db, link, parties.owner, now);
  wakeSchedules(c, told);
  const done = () =>
    withdrawSigninRequest(db, link.subject, claim).then(
      () => undefined,
      // The claim then lapses with the link: until then only this browser could repeat the use.
      (err: unknown) => logUnlessPlatformFault("sign-in link's claim kept until it expires", err),
    );
  const secondFactor = parties.owner?.secondFactor ?? false;
  return { outcome: "used", link, userId, merchantId: parties.client.merchantId, secondFactor, done };
}

type Standing =
  | { outcome: "usable"; link: SignInLink; tokenHash: string; parties: LinkParties }
  | { outcome: "invalid" | "expired" | "spent" };

type LinkParties = { client: ClientRecord; owner: AddressOwner | undefined };

/** Where a link stands for this browser (`claim`): unknown, expired, spent, no longer valid, or usable. */
async function linkStanding(c: Context<AppEnv>, token: string, claim: string | null, now: number): Promise<Standing> {
  const found = await findUnexpiredLink(c, token, now);
  if (found.outcome !== "live") return found;
  const { link, tokenHash } = found;
  const db = c.get("db")();
  const [held, client, owner] = await Promise.all([
    heldSigninRequestHash(db, link.subject, claim === null ? [tokenHash] : [tokenHash, claim], now),
    findClient(db, link.clientId),
    findAddressOwner(db, link.email),
  ]);
  if (held === undefined) return { outcome: "spent" };
  if (!client || !maySignIn(link, client, owner, held === claim)) return { outcome: "invalid" };
  return { outcome: "usable", link, tokenHash, parties: { client, owner } };
}

/**
 * Whether the link can still sign in: the client still has the link's redirect URI, and the
 * address is still the user's the link was made for (or still nobody's), allowed to sign in and
 * one that may prove the account. A link to an address without a user makes one when used, so
 * the browser whose use of it is under way (`claimedHere`) finds that user there.
 */
function maySignIn(
  link: SignInLink,
  client: ClientRecord,
  owner: AddressOwner | undefined,
  claimedHere: boolean,
): boolean {
  if (!isRegisteredRedirectUri(client.redirectUris, link.redirectUri, client.publicClient)) return false;
  const subject = linkSubject(owner?.user.id, link.email);
  const madeByThisLink = claimedHere && link.subject === linkSubject(undefined, link.email);
  if (subject !== link.subject && !madeByThisLink) return false;
  if (link.confirms === "email") return owner !== undefined && !REFUSED_USER_STATUSES[owner.user.status];
  if (link.resets === "password" && !owner) return false;
  return !owner || (!REFUSED_USER_STATUSES[owner.user.status] && mayProveAccount(owner));
}

/**
 * Signs the address's user in (the address verified, earlier mails to it given to the user), or
 * makes one of an address without. A link that confirms an address change also makes it the
 * user's primary address, and tells the user's clients (callbacks). Safe to repeat for one link: a
 * use tried again after a fault, or a double click's second request, finds the user the first one
 * made.
 */
async function signInUser(
  db: Database,
  link: SignInLink,
  owner: AddressOwner | undefined,
  now: number,
): Promise<{ userId: number; told: { clientId: string }[] }> {
  const { email } = link;
  if (owner) {
    const userId = owner.user.id;
    if (link.confirms === "email" && !owner.primary) {
      // Primary first: the sign-in's record then marks the primary address verified.
      const [told] = await db.batch([
        callbackChangeRows(db, { userId, changedFields: ["email"] }, now),
        ...makePrimaryEmail(db, userId, email, now),
        ...recordLinkSignIn(db, userId, email, now),
        claimUnownedMails(db, userId, email),
      ]);
      return { userId, told };
    }
    await db.batch([...recordLinkSignIn(db, userId, email, now), claimUnownedMails(db, userId, email)]);
    return { userId, told: [] };
  }
  const uuid = crypto.randomUUID();
  const [user, address] = insertSignedInUser(db, { uuid, email, now, profile: link.profile ?? {} });
  try {
    const [[inserted]] = await db.batch([user, address, claimUnownedMails(db, newUserId(uuid), email)]);
    return { userId: inserted!.id, told: [] };
  } catch (err) {
    // Landed with its answer lost, or refused by the address's unique index as another request of
    // this use made the user first: either way the user is there now. Anything else is thrown.
    if (!platformFaultOf(err) && !violatesUnique(err, "user_emails.value")) throw err;
    const made = await findAddressOwner(db, email);
    if (!made) throw err;
    return { userId: made.user.id, told: [] };
  }
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

/**
 * The way back to the client from the page of a link that can no longer sign in: its
 * authorization request's failure URI (or redirect URI), still registered, with `access_denied`
 * and the request's `state`; none for a token that is no link, or a client that is gone.
 */
export async function linkWayBack(
  c: Context<AppEnv>,
  token: string,
  description: string,
): Promise<{ client: ClientRecord; href: string } | undefined> {
  const found = token.length <= MAX_TOKEN_LENGTH ? await findSignInLink(c.env, token) : null;
  if (!found) return undefined;
  const { link } = found;
  const uri = link.authorization.failure_redirect_uri ?? link.redirectUri;
  const failure = { error: "access_denied", description };
  return clientWayBack(c, link.clientId, uri, failure, link.authorization.state);
}
