/**
 * The edge Worker with its sign-in Worker bound (SIGN_IN, as staging and production deploy them):
 * the sign-in Worker here is this Worker's own fetch on the configured env, which binds none, so it
 * answers what it is passed with the real local D1, KV and Durable Object, as the placed deployment
 * does. A wrapper keeps what was passed, and fails the passing where a test says so.
 */
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Bindings } from "../src/env";
import { Browser, expectPage, redirectParameters } from "./helpers/browser";
import { fetchWith } from "./helpers/faults";
import { basicAuth, ingrid, webClient } from "./helpers/http";
import { createClient, createUser } from "./helpers/seed";

const CALLBACK = "https://test.example/callback";
const FORM = { "Content-Type": "application/x-www-form-urlencoded" };

let nextUser = 1_100_000 + Math.floor(Math.random() * 1000) * 10;

/** The edge Worker's env with SIGN_IN bound, and what was passed to it. */
function split({ failing = false } = {}) {
  const passed: { method: string; path: string; redirect: string; body: string; ip: string | null }[] = [];
  const signIn = {
    async fetch(request: Request) {
      passed.push({
        method: request.method,
        path: new URL(request.url).pathname,
        redirect: request.redirect,
        body: await request.clone().text(),
        ip: request.headers.get("CF-Connecting-IP"),
      });
      if (failing) throw new Error("Network connection lost.");
      return exports.default.fetch(request);
    },
  } as unknown as Fetcher;
  const edge: Bindings = { ...env, SIGN_IN: signIn };
  const send = (path: string, init: RequestInit = {}) => fetchWith(edge, path, { redirect: "manual", ...init });
  return { passed, send };
}

/** The caller's address, as Cloudflare's edge sets it. */
const CALLER = { "CF-Connecting-IP": "203.0.113.7" };

const post = (fields: Record<string, string>, headers: Record<string, string> = {}): RequestInit => ({
  method: "POST",
  headers: { ...FORM, ...CALLER, ...headers },
  body: new URLSearchParams(fields).toString(),
});

function authorizePath(clientId: string, extra: Record<string, string> = {}) {
  const query = new URLSearchParams({ client_id: clientId, redirect_uri: CALLBACK, response_type: "code", ...extra });
  return `/oauth/authorize?${query}`;
}

describe("the edge Worker with a sign-in Worker", () => {
  it("passes the grants that need the primary, body and credentials whole, and gives back their answers", async () => {
    const { passed, send } = split();
    const client = basicAuth(webClient.id, webClient.secret);
    const signIn = await send(
      "/oauth/token",
      post(
        {
          grant_type: "password",
          username: ingrid.email,
          password: ingrid.password,
          redirect_uri: webClient.redirectUris[0]!,
        },
        client,
      ),
    );
    expect(signIn.status).toBe(200);
    const { refresh_token } = (await signIn.json()) as { refresh_token: string };
    const refreshed = await send("/oauth/token", post({ grant_type: "refresh_token", refresh_token }, client));
    expect(refreshed.status).toBe(200);
    // The sign-in Worker's own measure (development), not the edge's: no D1, one Durable Object call.
    expect(refreshed.headers.get("Server-Timing")).toMatch(/"0 queries, 0 rows read, 0 written"/);
    expect(refreshed.headers.get("Server-Timing")).toMatch(/do;dur=[\d.]+;desc="1 call"/);
    expect(passed.map(({ method, path }) => `${method} ${path}`)).toEqual(["POST /oauth/token", "POST /oauth/token"]);
    expect(passed[1]!.body).toBe(new URLSearchParams({ grant_type: "refresh_token", refresh_token }).toString());
    // The caller's address goes along: the sign-in throttles count the caller, not the edge.
    expect(passed.map(({ ip }) => ip)).toEqual([CALLER["CF-Connecting-IP"], CALLER["CF-Connecting-IP"]]);
    // The rotation happened there: the new token goes on.
    const { refresh_token: next } = (await refreshed.json()) as { refresh_token: string };
    expect(next).not.toBe(refresh_token);
    expect(
      (await send("/oauth/token", post({ grant_type: "refresh_token", refresh_token: next }, client))).status,
    ).toBe(200);
  });

  it("answers at the edge what needs no primary: client_credentials, the key set, the API", async () => {
    const { passed, send } = split();
    const token = await send(
      "/oauth/token",
      post({ grant_type: "client_credentials" }, basicAuth(webClient.id, webClient.secret)),
    );
    expect(token.status).toBe(200);
    expect((await send("/oauth/jwks")).status).toBe(200);
    expect((await send("/api/2/status")).status).toBe(200);
    expect((await send("/.well-known/openid-configuration")).status).toBe(200);
    expect(passed).toEqual([]);
    // Not a form: the sign-in Worker refuses it, as it would anything it cannot read.
    const json = await send("/oauth/token", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ grant_type: "client_credentials" }),
    });
    expect(json.status).toBe(400);
    expect(passed.map(({ path }) => path)).toEqual(["/oauth/token"]);
  });

  it("passes userinfo and SPiD's browser paths, which read the primary too", async () => {
    const { passed, send } = split();
    expect((await send("/oauth/userinfo")).status).toBe(401);
    expect((await send(`/flow/login?client_id=${webClient.id}&redirect_uri=${CALLBACK}`)).status).toBeLessThan(500);
    expect((await send("/logout")).status).toBeLessThan(500);
    expect(passed.map(({ path }) => path)).toEqual(["/oauth/userinfo", "/flow/login", "/logout"]);
  });

  it("runs the browser flow there: the login page, single sign-on's redirect (never followed), the code", async () => {
    const { passed, send } = split();
    const client = await createClient({
      redirectUris: [CALLBACK],
      grantTypes: ["authorization_code", "refresh_token"],
      autoApprove: true,
      enableSso: true,
    });
    const user = await createUser(nextUser++, { clients: [client.id] });
    const browser = new Browser({}, new Map(), send);
    const login = await expectPage(await browser.get(authorizePath(client.id)), 200, "Sign in");
    expect(browser.cookies.has("__Host-csrf")).toBe(true);
    const signedIn = await browser.submit(login, {
      action: "login",
      email: user.email,
      password: user.password,
      remember: "1",
    });
    expect(signedIn.status).toBe(303);
    expect(browser.cookies.has("__Host-session")).toBe(true);
    // Single sign-on: the session passes straight through to the client's redirect URI.
    const sso = await browser.get(authorizePath(client.id, { state: "s-1" }));
    const { base, params } = redirectParameters(sso);
    expect(base).toBe(CALLBACK);
    expect(params.get("state")).toBe("s-1");
    expect(passed.every(({ redirect }) => redirect === "manual")).toBe(true);
    const redeemed = await send(
      "/oauth/token",
      post(
        { grant_type: "authorization_code", code: params.get("code")!, redirect_uri: CALLBACK },
        basicAuth(client.id, client.secret),
      ),
    );
    expect(redeemed.status).toBe(200);
    expect(passed.map(({ method, path }) => `${method} ${path}`)).toEqual([
      "GET /oauth/authorize",
      "POST /oauth/authorize",
      "GET /oauth/authorize",
      "POST /oauth/token",
    ]);
  });

  it("answers 503 with Retry-After when the sign-in Worker cannot be reached, and tries nothing twice", async () => {
    const { passed, send } = split({ failing: true });
    const refused = await send(
      "/oauth/token",
      post({ grant_type: "refresh_token", refresh_token: "x.y" }, basicAuth(webClient.id, webClient.secret)),
    );
    expect(refused.status).toBe(503);
    expect(refused.headers.get("Retry-After")).toBe("1");
    expect(await refused.json()).toMatchObject({ error: "temporarily_unavailable" });
    expect(passed).toHaveLength(1);
    // A browser page says try again, in the page's language.
    const page = await send(authorizePath(webClient.id, { locale: "nb_NO" }));
    expect(page.status).toBe(503);
    expect(page.headers.get("Content-Type")).toMatch(/^text\/html/);
    expect(page.headers.get("Retry-After")).toBe("1");
    const status = await fetchWith({ ...env }, "/api/2/status");
    expect(JSON.stringify(await status.json())).toContain("Sign-in Worker");
  });
});
