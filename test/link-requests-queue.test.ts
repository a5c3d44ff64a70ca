/**
 * The login page's link requests as the queue's consumer takes them (src/queues/link-requests.ts):
 * a request it cannot read or whose client is gone is acknowledged and mails nothing (a retry
 * would not help); one that fails on the platform is retried.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { faultyEnv } from "./helpers/faults";
import { consumeLinkRequests, linkRequest } from "./helpers/queues";
import { mailbox } from "./helpers/mailbox";
import { createClient } from "./helpers/seed";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("the link requests' queue consumer", () => {
  it("makes and mails the link of a request, and acknowledges it", async () => {
    const client = await createClient({ grantTypes: ["client_credentials", "authorization_code"] });
    const email = `queued-${crypto.randomUUID()}@example.org`;
    const mail = mailbox();
    const result = await consumeLinkRequests([linkRequest(client.id, email)]);
    expect(result.acked).toEqual(["m0"]);
    expect(result.retried).toEqual([]);
    await mail.link(email);
  });

  it("acknowledges, mailing nothing, a message of another shape and a request whose client is gone", async () => {
    const email = `nobody-${crypto.randomUUID()}@example.org`;
    const mail = mailbox();
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const result = await consumeLinkRequests([{ clientId: 42 }, linkRequest("no-such-client", email)]);
    expect(result.acked.sort()).toEqual(["m0", "m1"]);
    expect(result.retried).toEqual([]);
    expect(mail.printed()).not.toContain(email);
    expect(errors.mock.calls.map(String).join("\n")).toContain("not a link request");
  });

  it("retries a request that failed on the platform, mailing nothing yet; the fault is logged once, by the platform layer", async () => {
    const client = await createClient({ grantTypes: ["client_credentials", "authorization_code"] });
    const email = `retried-${crypto.randomUUID()}@example.org`;
    const mail = mailbox();
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const result = await consumeLinkRequests(
      [linkRequest(client.id, email)],
      faultyEnv({ DB: { kind: "outage" } }).env,
    );
    expect(result.retried).toEqual(["m0"]);
    expect(result.acked).toEqual([]);
    expect(mail.printed()).not.toContain(email);
    expect(errors.mock.calls.map(String)).toEqual([expect.stringMatching(/^platform fault: D1 /)]);
  });
});
