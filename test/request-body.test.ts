import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../src/index";
import { BASE, basicAuth, webClient } from "./helpers/http";

const FORM = { "Content-Type": "application/x-www-form-urlencoded", ...basicAuth(webClient.id, webClient.secret) };

/** A form body of `chunks` 4 KiB pieces that counts how many pieces were pulled from it. */
function countedBody(chunks: number) {
  const counter = { pulled: 0 };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (counter.pulled++ === chunks) return controller.close();
      controller.enqueue(
        new TextEncoder().encode(counter.pulled === 1 ? "grant_type=client_credentials&x=" : "a".repeat(4096)),
      );
    },
  });
  return { stream, counter };
}

async function post(body: BodyInit, environment: string, headers: Record<string, string> = {}): Promise<Response> {
  const request = new Request(`${BASE}/oauth/token`, {
    method: "POST",
    headers: { ...FORM, ...headers },
    body,
    duplex: "half",
  } as RequestInit);
  return worker.fetch(request, { ...env, ENVIRONMENT: environment }, createExecutionContext());
}

describe("request bodies over 64 KiB", () => {
  it("are read to their end and refused with 413 locally, where wrangler dev needs that", async () => {
    const { stream, counter } = countedBody(40);
    const res = await post(stream, "development");
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ error: "invalid_request", error_code: 413 });
    expect(counter.pulled).toBe(41);
  });

  it("are dropped as soon as they pass the limit at the edge", async () => {
    const { stream, counter } = countedBody(40);
    const res = await post(stream, "production");
    expect(res.status).toBe(413);
    expect(counter.pulled).toBeLessThan(20);
  });

  it("are refused unread at the edge when their declared length is too large", async () => {
    const { stream, counter } = countedBody(40);
    const res = await post(stream, "production", { "Content-Length": String(40 * 4096 + 32) });
    expect(res.status).toBe(413);
    expect(counter.pulled).toBeLessThanOrEqual(1);
  });

  it("within the limit are read whole in every environment, chunked or of declared length", async () => {
    for (const environment of ["development", "production"]) {
      const { stream } = countedBody(10);
      expect((await post(stream, environment)).status).toBe(200);
      const form = "grant_type=client_credentials";
      expect((await post(form, environment, { "Content-Length": String(form.length) })).status).toBe(200);
    }
  });
});
