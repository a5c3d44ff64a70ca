import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { vi } from "vitest";
import type { Bindings } from "../../src/env";
import worker from "../../src/index";
import type { LinkRequestMessage } from "../../src/schemas/link-request";

export const LINK_CALLBACK = "https://test.example/callback";

/** What the login page queues when `email` asks for a link at `clientId`'s page. */
export function linkRequest(clientId: string, email: string): LinkRequestMessage {
  return {
    clientId,
    email,
    redirectUri: LINK_CALLBACK,
    remember: true,
    locale: "en_US",
    authorization: { client_id: clientId, redirect_uri: LINK_CALLBACK, response_type: "code" },
  };
}

/**
 * Hands the link requests' consumer a batch of `bodies` (message ids m0, m1, ...) with
 * `bindings`: see consumeBatch.
 */
export function consumeLinkRequests(bodies: unknown[], bindings: Bindings = env) {
  return consumeBatch("account-commerce-link-requests-local", bodies, { bindings });
}

/**
 * Hands `queue`'s consumer a batch of `bodies` (message ids m0, m1, ..., each on its `attempts`th
 * delivery) with `bindings`: the messages it acknowledged, those it asked to have retried, and
 * the delay it asked for each (which the local queue's result leaves out).
 */
export async function consumeBatch(
  queue: string,
  bodies: unknown[],
  { bindings = env, attempts = 1 }: { bindings?: Bindings; attempts?: number } = {},
) {
  const batch = createMessageBatch(
    queue,
    bodies.map((body, i) => ({ id: `m${i}`, timestamp: new Date(), attempts, body })),
  );
  const retries = batch.messages.map((message) => vi.spyOn(message, "retry"));
  await worker.queue(batch, bindings);
  const result = await getQueueResult(batch, createExecutionContext());
  return {
    acked: result.explicitAcks,
    retried: result.retryMessages.map((message: { msgId: string }) => message.msgId),
    retryDelays: Object.fromEntries(
      retries.flatMap((retry, i) => retry.mock.calls.map(([options]) => [`m${i}`, options?.delaySeconds])),
    ),
  };
}
