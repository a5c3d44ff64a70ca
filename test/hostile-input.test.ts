import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BASE, basicAuth, webClient } from "./helpers/http";

const FORM = { "Content-Type": "application/x-www-form-urlencoded" };
const client = basicAuth(webClient.id, webClient.secret);

/** Requests no real client sends; each must get a 4xx in the documented error format. */
const cases: [string, string, RequestInit][] = [
  [
    "a Basic header that is not base64",
    "/oauth/token",
    { method: "POST", headers: { ...FORM, Authorization: "Basic ====" }, body: "grant_type=client_credentials" },
  ],
  [
    "a Basic header of invalid UTF-8",
    "/oauth/token",
    {
      method: "POST",
      headers: { ...FORM, Authorization: `Basic ${btoa("\xff\xfe:\xff")}` },
      body: "grant_type=client_credentials",
    },
  ],
  [
    "Basic credentials with a bad percent escape",
    "/oauth/token",
    {
      method: "POST",
      headers: { ...FORM, Authorization: `Basic ${btoa("%zz:%")}` },
      body: "grant_type=client_credentials",
    },
  ],
  [
    "an empty Basic header",
    "/oauth/token",
    { method: "POST", headers: { ...FORM, Authorization: "Basic" }, body: "grant_type=client_credentials" },
  ],
  ["no Content-Type", "/oauth/token", { method: "POST", headers: client, body: "grant_type=client_credentials" }],
  [
    "a multipart body",
    "/oauth/token",
    {
      method: "POST",
      headers: { ...client, "Content-Type": "multipart/form-data; boundary=x" },
      body: '--x\r\nContent-Disposition: form-data; name="grant_type"\r\n\r\nclient_credentials\r\n--x--\r\n',
    },
  ],
  [
    "malformed JSON declared as JSON",
    "/oauth/token",
    { method: "POST", headers: { ...client, "Content-Type": "application/json" }, body: "{" },
  ],
  ["an empty form body", "/oauth/token", { method: "POST", headers: { ...FORM, ...client }, body: "" }],
  [
    "bad percent escapes in the form",
    "/oauth/token",
    { method: "POST", headers: { ...FORM, ...client }, body: "grant_type=%zz%&%=%%" },
  ],
  [
    "a NUL byte in a parameter",
    "/oauth/token",
    { method: "POST", headers: { ...FORM, ...client }, body: "grant_type=client%00credentials" },
  ],
  [
    "a 3,000-character grant type",
    "/oauth/token",
    { method: "POST", headers: { ...FORM, ...client }, body: `grant_type=${"x".repeat(3000)}` },
  ],
  [
    "a 10 KB password",
    "/oauth/token",
    {
      method: "POST",
      headers: { ...FORM, ...client },
      body: `grant_type=password&username=a%40b.example&redirect_uri=https%3A%2F%2Fx&password=${"p".repeat(10_000)}`,
    },
  ],
  [
    "array-style parameters",
    "/oauth/token",
    { method: "POST", headers: { ...FORM, ...client }, body: "grant_type[]=client_credentials" },
  ],
  ["a 5 KB bearer token", "/api/2/clients", { headers: { Authorization: `Bearer ${"a".repeat(5000)}` } }],
  ["a bearer token of three empty parts", "/api/2/clients", { headers: { Authorization: "Bearer .." } }],
  [
    "a JWT whose header is not JSON",
    "/api/2/me",
    { headers: { Authorization: `Bearer ${btoa("{").replace(/=/g, "")}.e30.sig` } },
  ],
  ["a repeated oauth_token", "/api/2/me?oauth_token=a&oauth_token=b", {}],
  ["an invalid escape in the path", "/api/2/%E0%A4%A", {}],
  ["a double suffix", "/api/2/status.json.jsonp", {}],
  ["a traversal attempt", "/api/2/../../oauth/token", {}],
  ["a callback with a Unicode escape", "/api/2/status.jsonp?callback=a%E2%80%A8b", {}],
  ["an invalid UTF-8 callback", "/api/2/status.jsonp?callback=%FF", {}],
  ["a DELETE on the API", "/api/2/clients", { method: "DELETE" }],
  ["a forged token on a JSONP path", "/api/2/me.jsonp?callback=cb&oauth_token=a.b.c", {}],
  ["a POST on a JSONP path", "/api/2/clients.jsonp?callback=cb", { method: "POST", headers: FORM, body: "x=1" }],
  ["a 20 KB unknown path", `/api/2/${"a".repeat(20_000)}`, {}],
  ["a 5 KB format suffix", `/api/2/version.${"A".repeat(5000)}`, {}],
  ["a reserved word as callback", "/api/2/status.jsonp?callback=import", {}],
  [
    "a malformed Authorization header beside oauth_token",
    "/api/2/clients?oauth_token=a.b.c",
    { headers: { Authorization: "Bearer" } },
  ],
  [
    "a media type that only starts like a form",
    "/oauth/token",
    {
      method: "POST",
      headers: { ...client, "Content-Type": "application/x-www-form-urlencodedXX" },
      body: "grant_type=client_credentials",
    },
  ],
  [
    "a body over the limit on a GET-only path",
    "/api/2/status",
    { method: "POST", headers: FORM, body: "x=".padEnd(70_000, "a") },
  ],
];

/** The HTTP status, or for JSONP (always served as 200) the status inside the container. */
async function outcome(res: Response, isApi: boolean): Promise<{ status: number; body: Record<string, any> | null }> {
  const text = await res.text();
  const jsonp = /^\/\*\*\/[\w$.]+\((.*)\);$/s.exec(text);
  if (jsonp) {
    const container = JSON.parse(jsonp[1]!);
    return { status: container.code, body: container.error };
  }
  if (res.status < 400) return { status: res.status, body: null };
  const body = JSON.parse(text);
  return { status: res.status, body: isApi ? body.error : body };
}

describe("hostile input never gets a 500", () => {
  it.each(cases)("%s", async (_, path, init) => {
    const request = new Request(`${BASE}${path}`, init);
    const { status, body } = await outcome(
      await exports.default.fetch(request),
      new URL(request.url).pathname.startsWith("/api/"),
    );
    expect(status).toBeGreaterThanOrEqual(200);
    expect(status).toBeLessThan(500);
    if (status >= 400) {
      expect(body).toMatchObject({ error_code: status });
      expect(typeof body!.error).toBe("string");
      expect(typeof body!.error_description).toBe("string");
    }
  });
});
