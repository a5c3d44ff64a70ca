/**
 * The login page's "e-mail me a link", made off the request that asked for it. The page answers
 * the same for every address (sent, blocked, unknown, unverified, too soon) and does the same work
 * before answering: it queues the request. Whether a link is made and mailed is decided here, in
 * the queue's consumer, so neither the answer nor the time the isolate spends after it tells who
 * is registered. A request that throws (a platform fault, after the platform layer's own retries)
 * mailed nothing and left nothing that holds the next try back (oauth/signin-links.ts), so it is
 * retried (queue `max_retries`); one that finds the user's last link still being mailed is retried
 * once that mail is out, and then refused as too soon. A message delivered twice mails once.
 */
import { type Database, openDatabase } from "../db/client";
import { findClient } from "../db/queries/clients";
import type { Bindings } from "../env";
import { logUnlessPlatformFault } from "../errors";
import { nowInSeconds } from "../http/datetime";
import { type Background, requestSignInLink } from "../oauth/signin-links";
import { pageLocale } from "../pages/locale";
import { type LinkRequestMessage, linkRequestMessageSchema } from "../schemas/link-request";

export async function queueLinkRequest(env: Bindings, request: LinkRequestMessage): Promise<void> {
  await env.LINK_REQUESTS.send(request, { contentType: "json" });
}

export async function makeQueuedLinks(batch: MessageBatch<unknown>, env: Bindings): Promise<void> {
  const db = openDatabase(env.DB);
  // What a request leaves to finish after it (a failed request's row withdrawn) runs alongside
  // the next messages; the batch is done when it is.
  const unfinished: Promise<unknown>[] = [];
  const background: Background = { waitUntil: (work) => unfinished.push(work) };
  for (const message of batch.messages) {
    const parsed = linkRequestMessageSchema.safeParse(message.body);
    if (!parsed.success) {
      // Not of this shape (a message of an older or newer version): retrying would not help.
      console.error("sign-in link request dropped: not a link request");
      message.ack();
      continue;
    }
    try {
      const retryAfter = await makeLink(env, db, parsed.data, background);
      if (retryAfter === null) message.ack();
      else message.retry({ delaySeconds: retryAfter });
    } catch (err) {
      logUnlessPlatformFault("sign-in link not made, to be retried", err);
      message.retry();
    }
  }
  await Promise.all(unfinished);
}

/** Makes and mails the link a message asks for; answers null when done, else the seconds to wait before trying again. */
async function makeLink(
  env: Bindings,
  db: Database,
  request: LinkRequestMessage,
  background: Background,
): Promise<number | null> {
  const { clientId, locale, ...link } = request;
  const client = await findClient(db, clientId);
  if (!client) return null;
  const made = await requestSignInLink(
    env,
    db,
    { ...link, client, locale: pageLocale(locale, undefined), context: null },
    nowInSeconds(),
    background,
  );
  if (made.outcome === "sending") return made.retryAfter;
  if (made.outcome === "not_sent") console.warn("sign-in link not sent: the mail failed");
  return null;
}
