/**
 * The login page's "e-mail me a link", made off the request that asked for it. The page answers
 * the same for every address (sent, blocked, unknown, unverified, too soon) and does the same work
 * before answering: it queues the request. Whether a link is made and mailed is decided here, in
 * the queue's consumer, so neither the answer nor the time the isolate spends after it tells who
 * is registered. A request that fails on the platform is retried (queue `max_retries`); a retry
 * within a minute of a link made cannot mail a second, since a second link for the same user
 * within a minute is refused.
 */
import { openDatabase } from "../db/client";
import { findClient } from "../db/queries/clients";
import type { Bindings } from "../env";
import { nowInSeconds } from "../http/datetime";
import { requestSignInLink } from "../oauth/signin-links";
import { pageLocale } from "../pages/locale";
import { type LinkRequestMessage, linkRequestMessageSchema } from "../schemas/link-request";

export async function queueLinkRequest(env: Bindings, request: LinkRequestMessage): Promise<void> {
  await env.LINK_REQUESTS.send(request, { contentType: "json" });
}

export async function makeQueuedLinks(batch: MessageBatch<unknown>, env: Bindings): Promise<void> {
  const db = openDatabase(env.DB);
  for (const message of batch.messages) {
    const parsed = linkRequestMessageSchema.safeParse(message.body);
    if (!parsed.success) {
      // Not of this shape (a message of an older or newer version): retrying would not help.
      console.error("sign-in link request dropped: not a link request");
      message.ack();
      continue;
    }
    const { clientId, locale, ...request } = parsed.data;
    try {
      const client = await findClient(db, clientId);
      if (client) {
        const outcome = await requestSignInLink(
          env,
          db,
          { ...request, client, locale: pageLocale(locale, undefined), context: null },
          nowInSeconds(),
        );
        if (outcome === "not_sent") console.warn("sign-in link not sent: the mail failed");
      }
      message.ack();
    } catch (err) {
      console.error(`sign-in link not made, to be retried: ${err instanceof Error ? err.name : "error"}`);
      message.retry();
    }
  }
}
