import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { openDatabase } from "../src/db/client";
import { sessions } from "../src/db/schema";
import worker from "../src/index";
import { keyRing, protectSecret } from "../src/security/data-protection";
import { Browser, expectPage as expectBrowserPage } from "./helpers/browser";
import { call, container, postForm, bearer, userTokenResponse } from "./helpers/http";
import { createClient, createUser, importData } from "./helpers/seed";

const CALLBACK = "https://test.example/callback";
const WEBVIEW_HOME = "https://test.example/webview";

let nextUser = 9_800 + Math.floor(Math.random() * 40) * 10;

/** A user signed in at an app client, and a session code for a web client of the same merchant. */
async function sessionCode(overrides: { userStatus?: number } = {}) {
  const app = await createClient({ grantTypes: ["password"], autoApprove: true });
  const web = await createClient({ redirectUris: [CALLBACK, WEBVIEW_HOME] });
  const user = await createUser(nextUser++, { clients: [app.id] });
  const { access_token } = await userTokenResponse(user, { ...app, redirectUris: [CALLBACK] });
  const code = await anotherSessionCode(access_token, web.id);
  if (overrides.userStatus !== undefined)
    await createUser(Number(user.row.userId), { ...user.row, status: overrides.userStatus });
  return { code, web, userId: Number(user.row.userId), accessToken: access_token };
}

/** One more session code for the same user and web client. */
async function anotherSessionCode(accessToken: string, webId: string): Promise<string> {
  const res = await postForm(
    "/api/2/oauth/exchange",
    { clientId: webId, type: "session", redirectUri: WEBVIEW_HOME },
    bearer(accessToken),
  );
  return (await container(res)).data.code as string;
}

function open(code: string, headers: Record<string, string> = {}, query = "") {
  return call(`/oauth/webview?code=${encodeURIComponent(code)}${query}`, { headers, redirect: "manual" });
}

async function sessionsOf(userId: number) {
  return openDatabase(env.DB).select().from(sessions).where(eq(sessions.userId, userId)).all();
}

async function expectPage(res: Response, status: number, title: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get("Content-Type")).toContain("text/html");
  expect(res.headers.get("Set-Cookie")).toBeNull();
  expect(res.headers.get("Cache-Control")).toBe("no-store");
  expect(res.headers.get("Referrer-Policy")).toBe("no-referrer");
  const csp = res.headers.get("Content-Security-Policy")!;
  expect(csp).toContain("default-src 'none'");
  expect(csp).not.toContain("script-src");
  const body = await res.text();
  expect(body).toMatch(/^<!doctype html>/);
  expect(body).toContain(`<h1>${title}</h1>`);
  expect(body).not.toContain("<script");
  return body;
}

afterEach(() => {
  vi.useRealTimers();
});

describe("GET /oauth/webview: the webview entry", () => {
  it("starts a browser session for the code's user and redirects to the bound redirect URI", async () => {
    const { code, web, userId } = await sessionCode();
    const res = await open(code);
    expect(res.status).toBe(303);
    expect(res.headers.get("Location")).toBe(WEBVIEW_HOME);
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    expect(res.headers.get("Referrer-Policy")).toBe("no-referrer");
    const cookie = res.headers.get("Set-Cookie")!;
    // https here, so Secure with the __Host- prefix; 30 days, kept across restarts. The id, the
    // data-protection key's id, the signature.
    expect(cookie).toMatch(/^__Host-session=[A-Za-z0-9_-]{43}\.[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]{43};/);
    for (const attribute of ["Path=/", "HttpOnly", "Secure", "SameSite=Lax", "Max-Age=2592000"]) {
      expect(cookie).toContain(attribute);
    }
    const [session] = await sessionsOf(userId);
    expect(session).toMatchObject({ clientId: web.id, revoked: null });
    expect(session!.expires - session!.created).toBe(2_592_000);
    // Only the id's keyed hash is stored, never the cookie's id.
    const id = /=([^.]+)\./.exec(cookie)![1]!;
    expect(session!.idHash).toBe(await protectSecret(keyRing(env), id));
  });

  it("ends the browser's previous session when it starts a new one", async () => {
    const { code, web, userId, accessToken } = await sessionCode();
    const cookie = (await open(code)).headers.get("Set-Cookie")!.split(";")[0]!;
    expect((await open(await anotherSessionCode(accessToken, web.id), { Cookie: cookie })).status).toBe(303);
    const [first, second] = await sessionsOf(userId);
    expect(first!.revoked).not.toBeNull();
    expect(second!.revoked).toBeNull();
  });

  it("asks before switching a browser signed in as another user, naming both, and switches on confirmation", async () => {
    const victim = await sessionCode();
    const browser = new Browser();
    expect((await browser.get(`/oauth/webview?code=${encodeURIComponent(victim.code)}`)).status).toBe(303);
    const attacker = await sessionCode();
    const asked = await browser.get(`/oauth/webview?code=${encodeURIComponent(attacker.code)}`);
    // Not frameable, unlike the entry's other pages: no other site may trick the click.
    const page = await expectBrowserPage(asked, 200, "Switch account?");
    expect(page).toContain(`This browser is signed in as user${victim.userId}@example.org.`);
    expect(page).toContain(`asks to sign in as user${attacker.userId}@example.org instead.`);
    expect((await sessionsOf(victim.userId))[0]!.revoked).toBeNull();
    expect(await sessionsOf(attacker.userId)).toEqual([]);

    const switched = await browser.submit(page, {});
    expect(switched.status).toBe(303);
    expect(switched.headers.get("Location")).toBe(WEBVIEW_HOME);
    expect((await sessionsOf(victim.userId))[0]!.revoked).not.toBeNull();
    expect((await sessionsOf(attacker.userId))[0]!.revoked).toBeNull();
  });

  it("asks nothing for a spent code in a browser signed in as another user: it is used", async () => {
    const spent = await sessionCode();
    expect((await open(spent.code)).status).toBe(303);
    const other = await sessionCode();
    const browser = new Browser();
    await browser.get(`/oauth/webview?code=${encodeURIComponent(other.code)}`);
    await expectBrowserPage(
      await browser.get(`/oauth/webview?code=${encodeURIComponent(spent.code)}`),
      410,
      "This link has already been used",
      { frameable: true },
    );
  });

  it("answers a confirmation that is no form, or carries no code, with a page, switching nothing", async () => {
    const victim = await sessionCode();
    const browser = new Browser();
    await browser.get(`/oauth/webview?code=${encodeURIComponent(victim.code)}`);
    const json = await call("/oauth/webview", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ code: "x" }),
    });
    await expectPage(json, 400, "This link does not work");
    await expectPage(await browser.post("/oauth/webview", {}), 400, "This link does not work");
    expect((await sessionsOf(victim.userId))[0]!.revoked).toBeNull();
  });

  it("switches nothing on a confirmation without the page's CSRF token", async () => {
    const victim = await sessionCode();
    const browser = new Browser();
    await browser.get(`/oauth/webview?code=${encodeURIComponent(victim.code)}`);
    const attacker = await sessionCode();
    const forged = await browser.post("/oauth/webview", { code: attacker.code });
    await expectPage(forged, 400, "This link does not work");
    expect((await sessionsOf(victim.userId))[0]!.revoked).toBeNull();
    expect(await sessionsOf(attacker.userId)).toEqual([]);
  });

  it("refuses HEAD (link previews) without spending the code", async () => {
    const { code } = await sessionCode();
    const res = await call(`/oauth/webview?code=${code}`, { method: "HEAD" });
    expect(res.status).toBe(405);
    expect(res.headers.get("Set-Cookie")).toBeNull();
    expect((await open(code)).status).toBe(303);
  });

  it("opens a code once when opens race: the others are told to try again, and a replay ends the session", async () => {
    const { code, userId } = await sessionCode();
    const results = await Promise.all([1, 2, 3].map(() => open(code)));
    expect(results.filter((res) => res.status === 303)).toHaveLength(1);
    for (const res of results.filter((r) => r.status !== 303)) {
      // Held by the winner while it writes its session: refused without ending it.
      if (res.status === 503) await expectPage(res, 503, "We could not finish this just now");
      else await expectPage(res, 410, "This link has already been used");
    }
    await expectPage(await open(code), 410, "This link has already been used");
    const started = await sessionsOf(userId);
    expect(started).toHaveLength(1);
    expect(started[0]!.revoked).not.toBeNull();
  });

  it("tells a replay as used, not expired, after the code's 30 seconds", async () => {
    const created = Date.now();
    vi.useFakeTimers({ toFake: ["Date"], now: created });
    const { code, userId } = await sessionCode();
    expect((await open(code)).status).toBe(303);
    vi.setSystemTime(created + 45_000);
    await expectPage(await open(code), 410, "This link has already been used");
    expect((await sessionsOf(userId))[0]!.revoked).not.toBeNull();
  });

  it("sets a plain cookie where the service runs on local http, which cannot carry Secure ones", async () => {
    const { code } = await sessionCode();
    const local = { ...env, BASE_URL: "http://127.0.0.1:8787" };
    const res = await worker.fetch(
      new Request(`http://127.0.0.1:8787/oauth/webview?code=${code}`),
      local,
      createExecutionContext(),
    );
    expect(res.status).toBe(303);
    const cookie = res.headers.get("Set-Cookie")!;
    expect(cookie).toMatch(/^session=/);
    expect(cookie).not.toContain("Secure");
    expect(cookie).toContain("HttpOnly");
  });

  it("refuses a used code with a page, and ends the session its first use started", async () => {
    const { code, userId } = await sessionCode();
    expect((await open(code)).status).toBe(303);
    await expectPage(await open(code), 410, "This link has already been used");
    const [session] = await sessionsOf(userId);
    expect(session!.revoked).not.toBeNull();
  });

  it("refuses a code 30 seconds old with a page (a controlled clock), and starts no session", async () => {
    const created = Date.now();
    vi.useFakeTimers({ toFake: ["Date"], now: created });
    const { code, userId } = await sessionCode();
    vi.setSystemTime(created + 30_000);
    await expectPage(await open(code), 410, "This link has expired");
    expect(await sessionsOf(userId)).toEqual([]);
  });

  it.each([
    ["an unknown code", "A".repeat(43)],
    ["an empty code", ""],
    ["a code far too long", "A".repeat(300)],
  ])("answers %s with a page, not a session", async (_, code) => {
    await expectPage(await open(code), 400, "This link does not work");
  });

  it("answers no code and a repeated code with a page", async () => {
    const { code } = await sessionCode();
    await expectPage(await call("/oauth/webview"), 400, "This link does not work");
    await expectPage(await call(`/oauth/webview?code=${code}&code=${code}`), 400, "This link does not work");
  });

  it("does not open a code made for the token endpoint", async () => {
    const app = await createClient({ grantTypes: ["password"], autoApprove: true });
    const user = await createUser(nextUser++, { clients: [app.id] });
    const { access_token } = await userTokenResponse(user, { ...app, redirectUris: [CALLBACK] });
    const target = await createClient({ defaultRedirectUri: CALLBACK });
    const res = await postForm("/api/2/oauth/exchange", { clientId: target.id, type: "code" }, bearer(access_token));
    await expectPage(await open((await container(res)).data.code), 400, "This link does not work");
  });

  it("refuses a user blocked after the code was made", async () => {
    const { code, userId } = await sessionCode({ userStatus: -2 });
    await expectPage(await open(code), 400, "This link does not work");
    expect(await sessionsOf(userId)).toEqual([]);
  });

  it("refuses a redirect URI the client no longer has", async () => {
    const { code, web } = await sessionCode();
    await createClient({ id: web.id, secret: web.secret, redirectUris: [CALLBACK] });
    await expectPage(await open(code), 400, "This link does not work");
  });

  it("speaks the locale asked for, then the browser's language, in every message", async () => {
    const body = await expectPage(await open("x", {}, "&locale=nb_NO"), 400, "Denne lenken virker ikke");
    expect(body).toContain('<html lang="nb-NO">');
    await expectPage(
      await open("x", { "Accept-Language": "fr;q=1, sv-SE;q=0.8, en;q=0.5" }),
      400,
      "Den här länken fungerar inte",
    );
    await expectPage(await open("x", { "Accept-Language": "de, fr" }), 400, "This link does not work");
    const { code } = await sessionCode();
    await open(code);
    await expectPage(await open(code, { "Accept-Language": "nb" }), 410, "Denne lenken er allerede brukt");
  });
});

describe("GET and POST /oauth/logout", () => {
  /** A browser signed in through a webview code. */
  async function signedIn() {
    const { code, web, userId } = await sessionCode();
    const browser = new Browser();
    expect((await browser.get(`/oauth/webview?code=${encodeURIComponent(code)}`)).status).toBe(303);
    return { browser, web, userId };
  }

  async function signOut(browser: Browser, query = "", title = "Sign out?") {
    const page = await expectBrowserPage(await browser.get(`/oauth/logout${query}`), 200, title);
    return browser.submit(page, {});
  }

  it("asks first, then ends the session server-side, removes the cookie, and redirects to a registered URI", async () => {
    const { browser, web, userId } = await signedIn();
    const query = `?client_id=${web.id}&redirect_uri=${encodeURIComponent(CALLBACK)}`;
    const res = await signOut(browser, query);
    expect(res.status).toBe(303);
    expect(res.headers.get("Location")).toBe(CALLBACK);
    expect(res.headers.getSetCookie().find((c) => c.startsWith("__Host-session="))).toMatch(/Max-Age=0/);
    expect((await sessionsOf(userId))[0]!.revoked).not.toBeNull();
  });

  it("ends nothing on a GET, such as another site can make a browser send", async () => {
    const { browser, userId } = await signedIn();
    const res = await browser.get("/oauth/logout");
    await expectBrowserPage(res, 200, "Sign out?");
    expect(res.headers.getSetCookie().some((c) => c.startsWith("__Host-session="))).toBe(false);
    expect((await sessionsOf(userId))[0]!.revoked).toBeNull();
  });

  it("ends nothing on a POST without the page's CSRF token, and shows the page again", async () => {
    const { browser, userId } = await signedIn();
    const page = await expectBrowserPage(await browser.get("/oauth/logout"), 200, "Sign out?");
    const forged = await browser.submit(page, { csrf: "forged" });
    await expectBrowserPage(forged, 403, "Sign out?");
    const bare = await new Browser().submit(page, {});
    await expectBrowserPage(bare, 403, "Sign out?");
    expect((await sessionsOf(userId))[0]!.revoked).toBeNull();
  });

  it("ends nothing on a POST that is no form, and shows the page again", async () => {
    const { browser, userId } = await signedIn();
    const cookie = [...browser.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
    const res = await call("/oauth/logout", {
      method: "POST",
      headers: { "Content-Type": "application/json", Cookie: cookie },
      body: "{}",
    });
    await expectBrowserPage(res, 403, "Sign out?");
    expect((await sessionsOf(userId))[0]!.revoked).toBeNull();
  });

  it.each([
    ["an unregistered redirect URI", (id: string) => `?client_id=${id}&redirect_uri=https%3A%2F%2Fevil.example%2F`],
    ["a redirect URI without its client", () => `?redirect_uri=${encodeURIComponent(CALLBACK)}`],
    ["a client that does not exist", () => `?client_id=nobody-at-all&redirect_uri=${encodeURIComponent(CALLBACK)}`],
    ["nothing", () => ""],
  ])("signs out and shows a page, going nowhere, for %s", async (_, query) => {
    const { browser, web, userId } = await signedIn();
    const res = await signOut(browser, query(web.id));
    expect(res.status).toBe(200);
    expect(res.headers.get("Location")).toBeNull();
    expect(await res.text()).toContain("<h1>You are signed out</h1>");
    expect((await sessionsOf(userId))[0]!.revoked).not.toBeNull();
  });

  it("goes on at once without a live session, as there is nothing to end; a forged cookie ends nothing", async () => {
    const { browser, web, userId } = await signedIn();
    const [id] = browser.cookies.get("__Host-session")!.split(".");
    const forged = new Browser();
    forged.cookies.set("__Host-session", `${id}.${"A".repeat(43)}`);
    await expectBrowserPage(await forged.get("/oauth/logout"), 200, "You are signed out");
    expect((await sessionsOf(userId))[0]!.revoked).toBeNull();
    const query = `?client_id=${web.id}&redirect_uri=${encodeURIComponent(CALLBACK)}`;
    const res = await new Browser().get(`/oauth/logout${query}`);
    expect(res.status).toBe(303);
    expect(res.headers.get("Location")).toBe(CALLBACK);
  });

  it("speaks the browser's language, and refuses HEAD without signing out", async () => {
    const { browser, userId } = await signedIn();
    const cookie = `__Host-session=${browser.cookies.get("__Host-session")}`;
    expect((await call("/oauth/logout", { method: "HEAD", headers: { Cookie: cookie } })).status).toBe(405);
    expect((await sessionsOf(userId))[0]!.revoked).toBeNull();
    const res = await signOut(browser, "?locale=sv_SE", "Logga ut?");
    expect(await res.text()).toContain("<h1>Du är utloggad</h1>");
  });

  it("meets no max_age with a webview session, which an app's token began: an OpenID request signs in again", async () => {
    const { code, web } = await sessionCode();
    const browser = new Browser();
    expect((await browser.get(`/oauth/webview?code=${encodeURIComponent(code)}`)).status).toBe(303);
    await importData({
      clients: [
        {
          id: web.id,
          secret: web.secret,
          name: "Web",
          merchantId: 10,
          redirectUris: [CALLBACK, WEBVIEW_HOME],
          grantTypes: ["authorization_code"],
          enableSso: true,
          autoApprove: true,
        },
      ],
    });
    const query = (extra: Record<string, string>) =>
      new URLSearchParams({
        client_id: web.id,
        redirect_uri: CALLBACK,
        response_type: "code",
        scope: "openid",
        ...extra,
      });
    expect((await browser.get(`/oauth/authorize?${query({})}`)).status).toBe(303);
    const page = await browser.get(`/oauth/authorize?${query({ max_age: "3600" })}`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("<h1>Sign in</h1>");
  });
});
