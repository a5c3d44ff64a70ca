import { describe, expect, it } from "vitest";
import { verifySignedResponse } from "../docs/verify-signed-response";
import { bearer, call, container, serverToken, userToken, webClient } from "./helpers/http";
import { createClient } from "./helpers/seed";

/** The demo web client's signing secret (data/demo.json). */
const SIGNING_SECRET = "nd-web-signing-9Zx4";

type Signed = { data: string; algorithm: string; sig: string };

/** The spec's steps 1-4, written out with nothing but WebCrypto and atob. */
async function verifyBySpec(body: Signed, secret: string): Promise<{ valid: boolean; payload: unknown }> {
  const decode = (value: string) =>
    Uint8Array.from(atob(value.replace(/-/g, "+").replace(/_/g, "/")), (ch) => ch.charCodeAt(0));
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const expected = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(body.data)));
  const given = decode(body.sig);
  const valid = expected.length === given.length && expected.every((byte, i) => byte === given[i]);
  return { valid, payload: JSON.parse(new TextDecoder().decode(decode(body.data))) };
}

describe("signed responses (signed=1)", () => {
  it("carries data Base64 URL encoded, algorithm HMAC-SHA256 and sig, which verify by the spec's steps", async () => {
    const token = await userToken();
    const plain = await container(await call("/api/2/me", { headers: bearer(token) }));
    const res = await call("/api/2/me?signed=1", { headers: bearer(token) });
    expect(res.status).toBe(200);
    const body = (await container(res)) as unknown as Signed & { object: string; error: null };
    expect(body).toMatchObject({ object: "User", error: null, algorithm: "HMAC-SHA256" });
    expect(body.data).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(body.sig).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const { valid, payload } = await verifyBySpec(body, SIGNING_SECRET);
    expect(valid).toBe(true);
    expect(payload).toEqual(plain.data);
    expect(await verifySignedResponse(body, SIGNING_SECRET)).toEqual(plain.data);
  });

  it("detects tampered data, a tampered signature and the wrong secret", async () => {
    const body = (await container(
      await call("/api/2/me?signed=1", { headers: bearer(await userToken()) }),
    )) as unknown as Signed;
    const forged = btoa(JSON.stringify({ userId: "1" }))
      .replace(/=+$/, "")
      .replace(/\+/g, "-")
      .replace(/\//g, "_");
    const flipped = (body.sig[0] === "A" ? "B" : "A") + body.sig.slice(1);
    for (const [tampered, secret] of [
      [{ ...body, data: forged }, SIGNING_SECRET],
      [{ ...body, sig: flipped }, SIGNING_SECRET],
      [body, "another secret"],
    ] as const) {
      expect((await verifyBySpec(tampered, secret)).valid).toBe(false);
      await expect(verifySignedResponse(tampered, secret)).rejects.toThrow("Signature mismatch");
    }
  });

  // Without fields, the users' views come serialized from the isolate's copy (views/user.ts).
  it.each([
    ["selected fields", "&fields=userId,email"],
    ["whole users", ""],
  ])("signs lists (%s), keeps their meta, and keeps non-ASCII text intact", async (_, fields) => {
    const token = await serverToken();
    const path = `/api/2/users?filters=merchant${fields}`;
    const plain = await container(await call(path, { headers: bearer(token) }));
    const signed = (await container(
      await call(`${path}&signed=1`, { headers: bearer(token) }),
    )) as unknown as Signed & {
      meta: unknown;
    };
    expect(signed.meta).toEqual(plain.meta);
    const payload = await verifySignedResponse(signed, SIGNING_SECRET);
    expect(payload).toEqual(plain.data);
    expect(JSON.stringify(payload)).toContain("bücher.example");
  });

  it("signs JSONP responses too", async () => {
    const res = await call("/api/2/me.jsonp?callback=show&signed=1", { headers: bearer(await userToken()) });
    const text = await res.text();
    const body = JSON.parse(text.slice("/**/show(".length, -2)) as Signed;
    expect((await verifyBySpec(body, SIGNING_SECRET)).valid).toBe(true);
  });

  it("reads the parameter however it is spelt in the URL", async () => {
    const body = (await container(
      await call("/api/2/me?%73igned=1", { headers: bearer(await userToken()) }),
    )) as unknown as Signed;
    expect((await verifyBySpec(body, SIGNING_SECRET)).valid).toBe(true);
  });

  it("answers plainly without the parameter and with signed=0", async () => {
    const token = await userToken();
    for (const path of ["/api/2/me", "/api/2/me?signed=0"]) {
      const body = (await container(await call(path, { headers: bearer(token) }))) as unknown as Record<
        string,
        unknown
      >;
      expect(body).not.toHaveProperty("sig");
      expect(typeof body.data).toBe("object");
    }
  });

  it.each([["signed=2"], ["signed=yes"], ["signed=1&signed=1"]])("refuses %s with 400", async (query) => {
    const res = await call(`/api/2/me?${query}`, { headers: bearer(await userToken()) });
    expect(res.status).toBe(400);
    expect((await container(res)).error?.error_description).toBe("Invalid parameter value: signed");
  });

  it("refuses a client without a signing secret with a clear 400", async () => {
    const client = await createClient();
    const res = await call("/api/2/clients?signed=1", { headers: bearer(await serverToken(client)) });
    expect(res.status).toBe(400);
    expect((await container(res)).error?.error_description).toContain("no signing secret");
  });

  it("refuses a request without a token, which has no client to sign for", async () => {
    for (const path of ["/api/2/status?signed=1", "/api/2/openapi.json?signed=1"]) {
      const res = await call(path);
      expect(res.status).toBe(400);
      expect((await container(res)).error?.error_description).toContain("need an access token");
    }
  });

  it("does not sign failures", async () => {
    const res = await call("/api/2/user/999999?signed=1", { headers: bearer(await serverToken()) });
    expect(res.status).toBe(404);
    const body = (await container(res)) as unknown as Record<string, unknown>;
    expect(body).not.toHaveProperty("sig");
    expect(body.data).toBeNull();
  });

  it("signs with the calling client's secret, not another's", async () => {
    const body = (await container(
      await call("/api/2/clients?signed=1", { headers: bearer(await serverToken(webClient)) }),
    )) as unknown as Signed;
    expect((await verifyBySpec(body, SIGNING_SECRET)).valid).toBe(true);
    expect((await verifyBySpec(body, "nd-app-signing-1Lw6")).valid).toBe(false);
  });
});
