import { describe, expect, it } from "vitest";
import { normalizeRequestEncoding } from "../src/http/encoding";
import { BASE, basicAuth, call, container, webClient } from "./helpers/http";
import { createClient } from "./helpers/seed";

function formRequest(body: string | Uint8Array, query = ""): Request {
  return new Request(`${BASE}/oauth/token${query}`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body,
  });
}

/** What the pipeline does: the body read first, then handed over with the request; kept when nothing changes. */
async function normalize(request: Request): Promise<Request> {
  const body = request.body && new Uint8Array(await request.clone().arrayBuffer());
  return normalizeRequestEncoding(request, body) ?? request;
}

async function text(request: Request): Promise<string> {
  return new TextDecoder().decode(await request.arrayBuffer());
}

describe("incoming data is UTF-8", () => {
  it("leaves valid UTF-8 untouched", async () => {
    const query = new Request(`${BASE}/api/2/status?q=%C3%A6+x`);
    expect(await normalize(query)).toBe(query);
    const normalized = await normalize(formRequest("name=%C3%B8l&x=a+b&raw=\u00f8", "?q=%C3%A6"));
    expect(await text(normalized)).toBe("name=%C3%B8l&x=a+b&raw=\u00f8");
    expect(new URL(normalized.url).search).toBe("?q=%C3%A6");
  });

  it.each([
    ["application/x-www-form-urlencoded", false],
    ["application/x-www-form-urlencoded;charset=UTF-8", false],
    ['Application/X-WWW-Form-Urlencoded; charset="utf-8"', false],
    ["application/x-www-form-urlencoded; charset=ISO-8859-1", true],
    ["application/x-www-form-urlencoded; charset=utf-8; boundary=x", true],
  ])("rebuilds a valid UTF-8 form declared %j only to relabel another charset: %s", (contentType, rebuilt) => {
    const request = new Request(`${BASE}/oauth/token`, {
      method: "POST",
      headers: { "Content-Type": contentType },
      body: "a=b",
    });
    const normalized = normalizeRequestEncoding(request, new TextEncoder().encode("a=b"));
    expect(normalized !== null).toBe(rebuilt);
    if (normalized)
      expect(normalized.headers.get("Content-Type")).toBe("application/x-www-form-urlencoded; charset=utf-8");
  });

  it("reads an invalid percent-encoded sequence as ISO-8859-1", async () => {
    const normalized = await normalize(formRequest("name=%F8l&other=%C3%A6", "?q=bl%E5b%E6r+gr%F8d&ok=1"));
    const form = new URLSearchParams(await text(normalized));
    expect(form.get("name")).toBe("øl");
    expect(form.get("other")).toBe("æ");
    const query = new URL(normalized.url).searchParams;
    expect(query.get("q")).toBe("blåbær grød");
    expect(query.get("ok")).toBe("1");
  });

  it("reads raw ISO-8859-1 bytes in a form body as ISO-8859-1", async () => {
    const bytes = new Uint8Array([
      ...new TextEncoder().encode("name="),
      0x47,
      0xf8,
      0x74,
      0x65,
      0x62,
      0x6f,
      0x72,
      0x67,
    ]);
    const form = new URLSearchParams(await text(await normalize(formRequest(bytes))));
    expect(form.get("name")).toBe("Gøteborg");
  });

  it("authenticates a client whose secret arrives ISO-8859-1 encoded", async () => {
    const client = await createClient({ secret: "sëcret-with-latin1-ø-chars" });
    const body = `grant_type=client_credentials&client_id=${client.id}&client_secret=s%EBcret-with-latin1-%F8-chars`;
    const res = await call("/oauth/token", {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body,
    });
    expect(res.status).toBe(200);
  });

  it.each(["ISO-8859-1", "windows-1252", "utf-8"])(
    "accepts a form that declares charset=%s and converts it the same way",
    async (charset) => {
      const client = await createClient({ secret: "sëcret-declared-charset-ø" });
      const res = await call("/oauth/token", {
        method: "POST",
        headers: { "Content-Type": `application/x-www-form-urlencoded; charset=${charset}` },
        body: `grant_type=client_credentials&client_id=${client.id}&client_secret=s%EBcret-declared-charset-%F8`,
      });
      expect(res.status).toBe(200);
    },
  );

  it("never answers 500 to an invalid sequence in an API query", async () => {
    const res = await call("/api/2/status?x=%FF%FE%C3");
    expect(res.status).toBe(200);
    expect((await container(res)).object).toBe("Status");
  });
});

describe("form bodies are recognised by their media type", () => {
  const body = "grant_type=client_credentials";

  it.each([
    "application/x-www-form-urlencodedXX",
    "application/x-www-form-urlencoded-extra; charset=utf-8",
    "text/plain; x=application/x-www-form-urlencoded",
    "application/x-www-form-urlencoded/x",
  ])("refuses %s as not a form", async (contentType) => {
    const res = await call("/oauth/token", {
      method: "POST",
      headers: { "Content-Type": contentType, ...basicAuth(webClient.id, webClient.secret) },
      body,
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      error: "invalid_request",
      error_description: "The request body must be application/x-www-form-urlencoded",
    });
  });

  it.each(["application/x-www-form-urlencoded", " Application/X-WWW-Form-Urlencoded ; charset=UTF-8"])(
    "accepts %j, case and spacing aside",
    async (contentType) => {
      const res = await call("/oauth/token", {
        method: "POST",
        headers: { "Content-Type": contentType, ...basicAuth(webClient.id, webClient.secret) },
        body,
      });
      expect(res.status).toBe(200);
    },
  );
});
