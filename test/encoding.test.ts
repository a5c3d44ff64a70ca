import { describe, expect, it } from "vitest";
import { formText, utf8Url } from "../src/http/encoding";
import { Browser, expectPage, formAction, hiddenFields } from "./helpers/browser";
import { BASE, basicAuth, call, container, webClient } from "./helpers/http";
import { createClient, createUser } from "./helpers/seed";

/** Text and raw bytes joined into one body, as a client that writes its own bytes sends it. */
function bytesOf(...parts: (string | number[])[]): Uint8Array {
  return new Uint8Array(
    parts.flatMap((part) => (typeof part === "string" ? [...new TextEncoder().encode(part)] : part)),
  );
}

function tokenRequest(body: string | Uint8Array, headers: Record<string, string> = {}, query = ""): Promise<Response> {
  return call(`/oauth/token${query}`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", ...headers },
    body,
  });
}

describe("incoming data is UTF-8", () => {
  it("leaves valid UTF-8 untouched", () => {
    expect(utf8Url(`${BASE}/api/2/status?q=%C3%A6+x`)).toBeNull();
    const form = new URLSearchParams(formText(bytesOf("name=%C3%B8l&x=a+b&raw=\u00f8")));
    expect([...form]).toEqual([
      ["name", "øl"],
      ["x", "a b"],
      ["raw", "ø"],
    ]);
  });

  it("reads an invalid percent-encoded sequence as ISO-8859-1", () => {
    const form = new URLSearchParams(formText(bytesOf("name=%F8l&other=%C3%A6")));
    expect(form.get("name")).toBe("øl");
    expect(form.get("other")).toBe("æ");
    const query = new URL(utf8Url(`${BASE}/api/2/status?q=bl%E5b%E6r+gr%F8d&ok=1`)!).searchParams;
    expect(query.get("q")).toBe("blåbær grød");
    expect(query.get("ok")).toBe("1");
  });

  it("reads raw ISO-8859-1 bytes in a form body as ISO-8859-1", () => {
    const form = new URLSearchParams(formText(bytesOf("name=G", [0xf8], "teborg")));
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

  it("keeps a form body when the query around it is re-encoded", async () => {
    const client = await createClient({ secret: "sëcret-beside-a-latin1-query" });
    const res = await tokenRequest(
      `grant_type=client_credentials&client_id=${client.id}&client_secret=s%C3%ABcret-beside-a-latin1-query`,
      {},
      "?note=gr%F8d",
    );
    expect(res.status).toBe(200);
  });

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

describe("a form body is read as WHATWG's urlencoded parser reads its bytes, by every reader", () => {
  it("decodes raw UTF-8 bytes and percent escapes of one character together", async () => {
    const client = await createClient({ secret: "sëcret-raw-and-escaped" });
    // ë is C3 AB: the first byte raw, the second escaped.
    const body = bytesOf(
      `grant_type=client_credentials&client_id=${client.id}&client_secret=s`,
      [0xc3],
      "%ABcret-raw-and-escaped",
    );
    expect((await tokenRequest(body)).status).toBe(200);
  });

  it("keeps malformed percent escapes as they are", async () => {
    const client = await createClient({ secret: "100%zz-%-literal-%4" });
    const res = await tokenRequest(
      `grant_type=client_credentials&client_id=${client.id}&client_secret=100%zz-%-literal-%4`,
    );
    expect(res.status).toBe(200);
  });

  it("reads a byte order mark as part of the first name, not as a mark to drop", async () => {
    const auth = basicAuth(webClient.id, webClient.secret);
    const withMark = await tokenRequest(bytesOf([0xef, 0xbb, 0xbf], "grant_type=client_credentials"), auth);
    const without = await tokenRequest("scope=", auth);
    expect(withMark.status).toBe(400);
    expect(await withMark.json()).toEqual(await without.json());
  });

  it("reads the login page's form the same way as the validated forms", async () => {
    const client = await createClient({
      redirectUris: ["https://test.example/callback"],
      grantTypes: ["authorization_code"],
      fields: { email: true },
    });
    const user = await createUser(9_260 + Math.floor(Math.random() * 40), {
      password: "pässwörd long enough",
      clients: [],
    });
    const browser = new Browser();
    const query = new URLSearchParams({
      client_id: client.id,
      redirect_uri: "https://test.example/callback",
      response_type: "code",
    });
    const login = await expectPage(await browser.get(`/oauth/authorize?${query}`), 200, "Sign in");
    const fields = new URLSearchParams({ ...hiddenFields(login), action: "login", email: user.email });
    // ä raw, ö as a raw first byte and an escaped second one.
    const body = bytesOf(`${fields}&password=p`, [0xc3, 0xa4], "ssw", [0xc3], "%B6rd+long+enough");
    await expectPage(await browser.postBody(formAction(login), body), 200, "Allow access");
  });
});
