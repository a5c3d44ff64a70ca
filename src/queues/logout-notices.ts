/**
 * Back-channel logout (OpenID Connect Back-Channel Logout 1.0): when a browser session ends, every
 * client that received an ID token in it and registered a `backchannel_logout_uri` is sent a
 * signed logout token, as a form POST, off the request that ended the session. The request finds
 * the clients (the session's refresh tokens carry its `sid`) and queues one notice per client
 * before it ends the session, so a fault there leaves the session live for the user's retry
 * rather than a notice lost. The consumer signs and delivers each notice; a client that does not
 * answer 2xx in time is tried again later (queue `max_retries`, growing delays); after the last
 * try the audit trail records `backchannel-logout.failed`, as it records a callback that failed
 * every retry (queues/callbacks.ts).
 */
import * as z from "zod/mini";
import { type Database, openDatabase } from "../db/client";
import { insertAuditEvent } from "../db/queries/audit";
import { findClientRecord } from "../db/queries/clients";
import { findBackchannelClients } from "../db/queries/refresh-tokens";
import type { Bindings } from "../env";
import { loggable } from "../errors";
import { nowInSeconds } from "../http/datetime";
import { signToken } from "../oauth/tokens";
import { type LogoutNotice, logoutNoticeSchema } from "../schemas/logout-notice";

/** The queue's name, before its environment's suffix (wrangler.toml). */
export const LOGOUT_NOTICES_QUEUE = "account-commerce-logout-notices-";

const BACKCHANNEL_EVENT = "http://schemas.openid.net/event/backchannel-logout";
/** A logout token is for delivery now: two minutes. */
const LOGOUT_TOKEN_LIFETIME = 120;
/** How long a client's endpoint may take to answer before the notice is tried again. */
const DELIVERY_TIMEOUT_MS = 5_000;
/** The first retry waits this long, each later one twice as long as the one before. */
const FIRST_RETRY_DELAY_SECONDS = 10;
/** The queue's `max_retries` (wrangler.toml): the try after the last retry is the last. */
const MAX_RETRIES = 6;

/** Queues a notice for each client that received an ID token in the session `sid` and asked for them. */
export async function queueLogoutNotices(env: Bindings, db: Database, sid: string): Promise<void> {
  const clients = await findBackchannelClients(db, sid);
  await sendLogoutNotices(
    env,
    clients.map(({ clientId, uri, alg, sub }) => ({ clientId, uri, alg: alg ?? "RS256", sub, sid })),
  );
}

/** A queue takes at most this many messages in one call. */
const MAX_BATCH_MESSAGES = 100;

export async function sendLogoutNotices(env: Bindings, notices: LogoutNotice[]): Promise<void> {
  for (let i = 0; i < notices.length; i += MAX_BATCH_MESSAGES) {
    await env.LOGOUT_NOTICES.sendBatch(
      notices.slice(i, i + MAX_BATCH_MESSAGES).map((body) => ({ body, contentType: "json" as const })),
    );
  }
}

export async function deliverLogoutNotices(batch: MessageBatch<unknown>, env: Bindings): Promise<void> {
  await Promise.all(
    batch.messages.map(async (message) => {
      const parsed = z.safeParse(logoutNoticeSchema, message.body);
      if (!parsed.success) {
        console.error("logout notice dropped: not a logout notice");
        return message.ack();
      }
      if (await deliver(env, parsed.data)) return message.ack();
      if (message.attempts > MAX_RETRIES) {
        await recordFailure(env, parsed.data, message.attempts);
        return message.ack();
      }
      // The client's endpoint is down or refused it: later, less often each time.
      message.retry({ delaySeconds: FIRST_RETRY_DELAY_SECONDS * 2 ** (message.attempts - 1) });
    }),
  );
}

/** Posts the notice's logout token; true when the client answered 2xx. Never logs the token. */
async function deliver(env: Bindings, notice: LogoutNotice): Promise<boolean> {
  const now = nowInSeconds();
  const logoutToken = await signToken(env, notice.alg, "logout+jwt", {
    iss: env.BASE_URL,
    aud: notice.clientId,
    iat: now,
    exp: now + LOGOUT_TOKEN_LIFETIME,
    jti: crypto.randomUUID(),
    sub: notice.sub,
    ...(notice.sid !== undefined && { sid: notice.sid }),
    events: { [BACKCHANNEL_EVENT]: {} },
  });
  try {
    const res = await fetch(notice.uri, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ logout_token: logoutToken }),
      redirect: "manual",
      signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
    });
    await res.body?.cancel();
    if (res.ok) return true;
    console.warn(`logout notice to client ${notice.clientId} refused: ${res.status}`);
    return false;
  } catch {
    console.warn(`logout notice to client ${notice.clientId} not delivered`);
    return false;
  }
}

/** The last try failed: the client's merchant's trail says so (a fault here is logged: the notice has no tries left). */
async function recordFailure(env: Bindings, notice: LogoutNotice, attempts: number): Promise<void> {
  try {
    const db = openDatabase(env.DB);
    const client = await findClientRecord(db, notice.clientId);
    if (!client) return;
    await insertAuditEvent(db, {
      at: nowInSeconds(),
      merchantId: client.merchantId,
      clientId: notice.clientId,
      actor: "service",
      action: "backchannel-logout.failed",
      detail: { attempts, session: notice.sid !== undefined },
    }).run();
  } catch (error) {
    console.warn(`logout notice to client ${notice.clientId} failed every retry, not recorded: ${loggable(error)}`);
  }
}
