/**
 * The login page's link requests as the queue's consumer takes them (src/queues/link-requests.ts):
 * a request it cannot read or whose client is gone is acknowledged and mails nothing (a retry
 * would not help); one that fails on the platform is retried.
 */
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Bindings } from "../src/env";
import worker from "../src/index";
import type { LinkRequestMessage } from "../src/schemas/link-request";
import { mailbox } from "./helpers/mailbox";
import { createClient } from "./helpers/seed";

const CALLBACK = "https://test.example/callback";

function request(clientId: string, email: string): LinkRequestMessage {
  return {
    clientId,
    email,
    redirectUri: CALLBACK,
    remember: true,
    locale: "en_US",
    authorization: { client_id: clientId, redirect_uri: CALLBACK, response_type: "code" },
  };
}

async function consume(bodies: unknown[], bindings: Bindings = env) {
  const batch = createMessageBatch(
    "account-commerce-link-requests-local",
    bodies.map((body, i) => ({ id: `m${i}`, timestamp: new Date(), attempts: 1, body })),
  );
  await worker.queue(batch, bindings);
  return getQueueResult(batch, createExecutionContext());
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("the link requests' queue consumer", () => {
  it("makes and mails the link of a request, and acknowledges it", async () => {
    const client = await createClient({ grantTypes: ["client_credentials", "authorization_code"] });
    const email = `queued-${crypto.randomUUID()}@example.org`;
    const mail = mailbox();
    const result = await consume([request(client.id, email)]);
    expect(result.explicitAcks).toEqual(["m0"]);
    expect(result.retryMessages).toEqual([]);
    await mail.link(email);
  });

  it("acknowledges, mailing nothing, a message of another shape and a request whose client is gone", async () => {
    const email = `nobody-${crypto.randomUUID()}@example.org`;
    const mail = mailbox();
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const result = await consume([{ clientId: 42 }, request("no-such-client", email)]);
    expect(result.explicitAcks.sort()).toEqual(["m0", "m1"]);
    expect(result.retryMessages).toEqual([]);
    expect(mail.printed()).not.toContain(email);
    expect(errors.mock.calls.map(String).join("\n")).toContain("not a link request");
  });

  it("retries a request that failed on the platform, mailing nothing yet", async () => {
    const client = await createClient({ grantTypes: ["client_credentials", "authorization_code"] });
    const email = `retried-${crypto.randomUUID()}@example.org`;
    const mail = mailbox();
    vi.spyOn(console, "error").mockImplementation(() => {});
    const unreachable = () => {
      throw new Error("D1_ERROR: Network connection lost.");
    };
    const broken = { ...env, DB: { prepare: unreachable, withSession: unreachable } as unknown as D1Database };
    const result = await consume([request(client.id, email)], broken);
    expect(result.retryMessages.map((message: { msgId: string }) => message.msgId)).toEqual(["m0"]);
    expect(result.explicitAcks).toEqual([]);
    expect(mail.printed()).not.toContain(email);
  });
});
