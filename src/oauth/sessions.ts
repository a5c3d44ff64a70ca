/**
 * Browser sessions, the single sign-on of the browser flows. The cookie is `<id>.<key id>.<signature>`:
 * 256 random bits and their keyed HMAC under the key it names, so a forged cookie is refused before
 * any database read; D1 holds only the id's keyed hash, with the user, its expiry and a revocation.
 * A cookie of before key rotation, `<id>.<signature>`, stands for a bare hash under the first key. HttpOnly,
 * SameSite=Lax, and Secure with the `__Host-` prefix wherever the service runs on https (local
 * http cannot carry Secure cookies).
 */
import type { BatchItem } from "drizzle-orm/batch";
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { findLiveSession, insertSession, type LiveSession, revokeSession } from "../db/queries/sessions";
import type { SignInMethod } from "../db/schema";
import { signInEntry, type SignInClient } from "../events/audit";
import { queueLogoutNotices } from "../queues/logout-notices";
import type { AppEnv, Bindings } from "../env";
import { timingSafeEqual } from "../security/constant-time";
import { hashSecret, keyId, keyOfProtected, keyRing, protectSecret } from "../security/data-protection";
import { randomToken } from "../security/random-token";

const SESSION_COOKIE = "session";
/**
 * A remembered session (the login page's "keep me signed in", a sign-in link with `remember=1`)
 * and a webview's (apps keep their webview's cookies) live 30 days, with a cookie that outlives
 * the browser; any other ends with the browser, and after 12 hours on the server.
 */
export const REMEMBERED_SESSION_LIFETIME = 30 * 24 * 3600;
export const BROWSER_SESSION_LIFETIME = 12 * 3600;

export type SessionId = { id: string; idHash: string };

export type NewSession = {
  userId: number;
  /** The client the session is started through. */
  client: SignInClient;
  /** Seconds the session lives, server-side. */
  lifetime: number;
  /** Kept across browser restarts (a Max-Age); otherwise the cookie ends with the browser. */
  persistent: boolean;
  /** How the user signed in; none for a webview session, which an exchange code started. */
  method: SignInMethod | null;
  /** What else the sign-in writes (its record on the user), in the session's batch. */
  writes?: BatchItem<"sqlite">[];
};

/**
 * A new session id and its keyed hash; made before the session, so that what starts it (a webview
 * code) can record which session it started.
 */
export async function newSessionId(env: Bindings): Promise<SessionId> {
  const id = randomToken();
  return { id, idHash: await protectSecret(keyRing(env), id) };
}

/** Starts the session `id` and sets its cookie; the browser's previous session, if any, ends. */
export async function startSession(c: Context<AppEnv>, id: SessionId, session: NewSession, now: number): Promise<void> {
  await writeSession(c, id, session, now);
  await setSessionCookie(c, id, session);
}

/**
 * Writes the session `idHash` names, ending the browser's previous one, if any, without setting
 * its cookie: for a flow that may still fail once it is written (a webview code's commit), whose
 * error response would carry a cookie set before, for a session the retry starts again.
 */
export async function writeSession(
  c: Context<AppEnv>,
  { idHash }: SessionId,
  session: NewSession,
  now: number,
): Promise<void> {
  const db = c.get("db")();
  const previous = await presentedSessionHash(c);
  // The session this one replaces ends: its clients hear of it first (back-channel logout).
  if (previous !== null) await queueLogoutNotices(c.env, db, await sessionSid(c.env, previous));
  await db.batch([
    insertSession(db, {
      idHash,
      userId: session.userId,
      clientId: session.client.id,
      created: now,
      expires: now + session.lifetime,
      method: session.method,
    }),
    ...(previous === null ? [] : [revokeSession(db, previous, now)]),
    ...(session.method === null ? [] : [signInEntry(c, session.client, session.userId, session.method, now)]),
    ...(session.writes ?? []),
  ]);
}

/** Sets the cookie of the session `id`, once writeSession has written it and nothing can fail after. */
export async function setSessionCookie(
  c: Context<AppEnv>,
  { id }: SessionId,
  { lifetime, persistent }: Pick<NewSession, "lifetime" | "persistent">,
): Promise<void> {
  const key = c.env.DATA_PROTECTION_KEY;
  setCookie(c, SESSION_COOKIE, `${id}.${await keyId(key)}.${await hashSecret(key, `session-cookie:${id}`)}`, {
    path: "/",
    httpOnly: true,
    sameSite: "Lax",
    ...cookieSecurity(c),
    ...(persistent && { maxAge: lifetime }),
  });
}

/**
 * A signed-in user, known by the browser's session `sessionHash` (its id's keyed hash), started at
 * a client of `merchantId`.
 */
export type SignedIn = LiveSession & { sessionHash: string };

/**
 * The session's public id, OpenID Connect's `sid`: the ID tokens of one session share it, and a
 * logout names the session by it. Derived from the id's keyed hash, so it opens nothing.
 */
export async function sessionSid(env: Bindings, sessionHash: string): Promise<string> {
  return hashSecret(await keyOfProtected(keyRing(env), sessionHash), `sid:${sessionHash}`);
}

/** The `sid` of the session the browser presents (live or not), when its cookie's signature holds. */
export async function presentedSessionSid(c: Context<AppEnv>): Promise<string | null> {
  const sessionHash = await presentedSessionHash(c);
  return sessionHash === null ? null : sessionSid(c.env, sessionHash);
}

/** The browser's session, when it presents one that is live and whose user may sign in. */
export async function presentedSession(c: Context<AppEnv>, now: number): Promise<SignedIn | undefined> {
  const sessionHash = await presentedSessionHash(c);
  if (sessionHash === null) return undefined;
  const session = await findLiveSession(c.get("db")(), sessionHash, now);
  return session && { ...session, sessionHash };
}

/** Ends the browser's session, if it presents one, and removes its cookie. */
export async function endPresentedSession(c: Context<AppEnv>, now: number): Promise<void> {
  const presented = await presentedSessionHash(c);
  if (presented !== null) await revokeSession(c.get("db")(), presented, now);
  deleteCookie(c, SESSION_COOKIE, { path: "/", ...cookieSecurity(c) });
}

/** The keyed hash of the session id the browser presents, when its cookie's signature holds. */
async function presentedSessionHash(c: Context<AppEnv>): Promise<string | null> {
  const { prefix } = cookieSecurity(c);
  const value = getCookie(c, SESSION_COOKIE, prefix);
  const parts = value?.split(".") ?? [];
  if (parts.length !== 2 && parts.length !== 3) return null;
  const [id, signature] = [parts[0], parts.at(-1)];
  if (!id || !signature) return null;
  const ring = keyRing(c.env);
  const named = parts.length === 3 ? parts[1] : undefined;
  for (const key of ring.previous ? [ring.current, ring.previous] : [ring.current]) {
    const keyName = await keyId(key);
    if (named !== undefined && named !== keyName) continue;
    if (!timingSafeEqual(await hashSecret(key, `session-cookie:${id}`), signature)) continue;
    const hash = await hashSecret(key, id);
    return named === undefined ? hash : `${keyName}.${hash}`;
  }
  return null;
}

export function cookieSecurity(c: Context<AppEnv>): { secure: boolean; prefix?: "host" } {
  return new URL(c.env.BASE_URL).protocol === "https:" ? { secure: true, prefix: "host" } : { secure: false };
}
