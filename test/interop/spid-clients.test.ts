/**
 * SPiD's own npm-published clients, unmodified, against the running server (`npm start`):
 * `token-introspection` (remote introspection, RFC 7662, and local verification of RS256 access
 * tokens against the published keys) and `@schibsted/account-sdk-browser` (its login and logout
 * URLs). Each is configured as its README says, with this service as the environment.
 */
import { Identity } from "@schibsted/account-sdk-browser";
import tokenIntrospection from "token-introspection";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import demo from "../../data/demo.json";
import { type RunningServer, startServer } from "../cli/running-server";

const [web, , fjord] = demo.clients as [
  (typeof demo.clients)[number],
  (typeof demo.clients)[number],
  (typeof demo.clients)[number],
];
const [ingrid] = demo.users as [(typeof demo.users)[number]];
const REDIRECT_URI = web.redirectUris[0]!;

let server: RunningServer;

beforeAll(async () => {
  server = await startServer();
}, 180_000);

afterAll(() => server?.stop(), 60_000);

async function tokens(fields: Record<string, string>, client = web) {
  const res = await fetch(`${server.base}/oauth/token`, {
    method: "POST",
    headers: { Authorization: `Basic ${btoa(`${client.id}:${client.secret}`)}` },
    body: new URLSearchParams(fields),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { access_token: string; refresh_token: string };
}

describe("token-introspection", () => {
  const introspect = () =>
    tokenIntrospection({
      endpoint: `${server.base}/oauth/introspect`,
      client_id: web.id,
      client_secret: web.secret,
      fetch,
    });

  it("finds a live user token active, with its claims", async () => {
    const { access_token } = await tokens({
      grant_type: "password",
      username: ingrid.email,
      password: ingrid.password!,
      redirect_uri: REDIRECT_URI,
    });
    expect(await introspect()(access_token)).toMatchObject({
      active: true,
      client_id: web.id,
      sub: String(ingrid.userId),
    });
  });

  it("verifies an RS256 access token locally against /oauth/jwks, with no call to the introspection endpoint", async () => {
    // The demo's Fjord client asks for RS256 access tokens (accessTokenSignedResponseAlg).
    const { access_token } = await tokens({ grant_type: "client_credentials" }, fjord);
    const local = tokenIntrospection({ jwks_uri: `${server.base}/oauth/jwks`, fetch });
    expect(await local(access_token)).toMatchObject({
      active: true,
      client_id: fjord.id,
      sub: fjord.id,
      iss: server.base,
    });
    // An EdDSA token is not one it can verify (RS256 only): refused, never taken as active.
    const { access_token: eddsa } = await tokens({ grant_type: "client_credentials" });
    await expect(local(eddsa)).rejects.toBeInstanceOf(tokenIntrospection.errors.TokenNotActiveError);
  });

  it("finds a revoked token and a made-up one not active", async () => {
    const { access_token, refresh_token } = await tokens({
      grant_type: "password",
      username: ingrid.email,
      password: ingrid.password!,
      redirect_uri: REDIRECT_URI,
    });
    await fetch(`${server.base}/oauth/revoke`, {
      method: "POST",
      headers: { Authorization: `Basic ${btoa(`${web.id}:${web.secret}`)}` },
      body: new URLSearchParams({ token: refresh_token }),
    });
    await expect(introspect()(access_token)).rejects.toBeInstanceOf(tokenIntrospection.errors.TokenNotActiveError);
    await expect(introspect()("not-a-token")).rejects.toBeInstanceOf(tokenIntrospection.errors.TokenNotActiveError);
  });
});

describe("@schibsted/account-sdk-browser", () => {
  // The SDK runs in a site's page: here the page is its address alone, all the SDK reads of it.
  const page = { location: { href: "https://www.nordicdaily.example/" } };
  beforeAll(() => {
    (globalThis as { window?: unknown }).window = page;
  });
  afterAll(() => {
    delete (globalThis as { window?: unknown }).window;
  });

  /** The SDK as a site configures it, with this service as its environment and its session domain. */
  const identity = () =>
    new Identity({
      clientId: web.id,
      redirectUri: REDIRECT_URI,
      env: server.base,
      sessionDomain: server.base,
      window: page,
    });

  it("gets the login page from loginUrl(), OpenID scope and select_account prompt as the SDK sends them", async () => {
    const url = new URL(identity().loginUrl({ state: "from-the-sdk" }));
    expect(url.searchParams.get("scope")).toBe("openid");
    expect(url.searchParams.get("prompt")).toBe("select_account");
    const res = await fetch(url, { redirect: "manual" });
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain("<h1>Sign in</h1>");
    expect(page).toContain('<input type="hidden" name="state" value="from-the-sdk"/>');
  });

  it("signs out through logoutUrl() and comes back to the site's redirect URI", async () => {
    const res = await fetch(identity().logoutUrl(), { redirect: "manual" });
    expect(res.status).toBe(303);
    expect(res.headers.get("Location")).toBe(REDIRECT_URI);
  });
});
