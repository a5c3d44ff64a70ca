import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { openDatabase } from "../src/db/client";
import { sessions } from "../src/db/schema";
import worker from "../src/index";
import { hashSecret } from "../src/security/data-protection";
import { call, container, postForm, bearer, userTokenResponse } from "./helpers/http";
import { createClient, createUser } from "./helpers/seed";

const CALLBACK = "https://test.example/callback";
const WEBVIEW_HOME = "https://test.example/webview";

let nextUser = 9_800 + Math.floor(Math.random() * 40) * 10;

/** A user signed in at an app client, and a session code for a web client of the same merchant. */
async function sessionCode(overrides: { userStatus?: number } = {}) {
  const app = await createClient({ grantTypes: ["password"], autoApprove: true });
  const web = await createClient({ redirectUris: [CALLBACK, WEBVIEW_HOME] });
  const user = await createUser(nextUser++, { clients: [app.id] });
  const { access_token } = await userTokenResponse(user, { ...app, redirectUris: [CALLBACK] });
  const res = await postForm(
    "/api/2/oauth/exchange",
    { clientId: web.id, type: "session", redirectUri: WEBVIEW_HOME },
    bearer(access_token),
  );
  const code = (await container(res)).data.code as string;
  if (overrides.userStatus !== undefined)
    await createUser(Number(user.row.userId), { ...user.row, status: overrides.userStatus });
  return { code, web, userId: Number(user.row.userId) };
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
    // https here, so Secure with the __Host- prefix; 30 days, kept across restarts.
    expect(cookie).toMatch(/^__Host-session=[A-Za-z0-9_-]{43}\.[A-Za-z0-9_-]{43};/);
    for (const attribute of ["Path=/", "HttpOnly", "Secure", "SameSite=Lax", "Max-Age=2592000"]) {
      expect(cookie).toContain(attribute);
    }
    const [session] = await sessionsOf(userId);
    expect(session).toMatchObject({ clientId: web.id, revoked: null });
    expect(session!.expires - session!.created).toBe(2_592_000);
    // Only the id's keyed hash is stored, never the cookie's id.
    const id = /=([^.]+)\./.exec(cookie)![1]!;
    expect(session!.idHash).toBe(await hashSecret(env.DATA_PROTECTION_KEY, id));
  });

  it("ends the browser's previous session when it starts a new one", async () => {
    const first = await sessionCode();
    const cookie = (await open(first.code)).headers.get("Set-Cookie")!.split(";")[0]!;
    const second = await sessionCode();
    expect((await open(second.code, { Cookie: cookie })).status).toBe(303);
    expect((await sessionsOf(first.userId))[0]!.revoked).not.toBeNull();
    expect((await sessionsOf(second.userId))[0]!.revoked).toBeNull();
  });

  it("refuses HEAD (link previews) without spending the code", async () => {
    const { code } = await sessionCode();
    const res = await call(`/oauth/webview?code=${code}`, { method: "HEAD" });
    expect(res.status).toBe(405);
    expect(res.headers.get("Set-Cookie")).toBeNull();
    expect((await open(code)).status).toBe(303);
  });

  it("leaves no live session when opens of one code race, whichever wins", async () => {
    const { code, userId } = await sessionCode();
    const results = await Promise.all([1, 2, 3].map(() => open(code)));
    expect(results.filter((res) => res.status === 303).length).toBeLessThanOrEqual(1);
    for (const res of results.filter((r) => r.status !== 303))
      await expectPage(res, 410, "This link has already been used");
    const started = await sessionsOf(userId);
    expect(started.every((session) => session.revoked !== null)).toBe(true);
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

describe("GET /oauth/logout", () => {
  async function signedIn() {
    const { code, web, userId } = await sessionCode();
    const cookie = (await open(code)).headers.get("Set-Cookie")!.split(";")[0]!;
    return { cookie, web, userId };
  }

  function logout(cookie: string | null, query = "", headers: Record<string, string> = {}) {
    return call(`/oauth/logout${query}`, {
      headers: { ...(cookie && { Cookie: cookie }), ...headers },
      redirect: "manual",
    });
  }

  it("ends the session server-side, removes the cookie, and redirects to a registered URI", async () => {
    const { cookie, web, userId } = await signedIn();
    const query = `?client_id=${web.id}&redirect_uri=${encodeURIComponent(CALLBACK)}`;
    const res = await logout(cookie, query);
    expect(res.status).toBe(303);
    expect(res.headers.get("Location")).toBe(CALLBACK);
    expect(res.headers.get("Set-Cookie")).toMatch(/^__Host-session=;.*Max-Age=0/);
    expect((await sessionsOf(userId))[0]!.revoked).not.toBeNull();
  });

  it.each([
    ["an unregistered redirect URI", (id: string) => `?client_id=${id}&redirect_uri=https%3A%2F%2Fevil.example%2F`],
    ["a redirect URI without its client", () => `?redirect_uri=${encodeURIComponent(CALLBACK)}`],
    ["a client that does not exist", () => `?client_id=nobody-at-all&redirect_uri=${encodeURIComponent(CALLBACK)}`],
    ["nothing", () => ""],
  ])("signs out and shows a page, going nowhere, for %s", async (_, query) => {
    const { cookie, web, userId } = await signedIn();
    const res = await logout(cookie, query(web.id));
    expect(res.status).toBe(200);
    expect(res.headers.get("Location")).toBeNull();
    expect(await res.text()).toContain("<h1>You are signed out</h1>");
    expect((await sessionsOf(userId))[0]!.revoked).not.toBeNull();
  });

  it("leaves sessions alone for a forged cookie, and answers without one", async () => {
    const { cookie, userId } = await signedIn();
    const [name, value] = cookie.split("=") as [string, string];
    const [id] = value.split(".");
    expect((await logout(`${name}=${id}.${"A".repeat(43)}`)).status).toBe(200);
    expect((await sessionsOf(userId))[0]!.revoked).toBeNull();
    expect((await logout(null)).status).toBe(200);
  });

  it("speaks the browser's language, and refuses HEAD without signing out", async () => {
    const { cookie, userId } = await signedIn();
    expect((await call("/oauth/logout", { method: "HEAD", headers: { Cookie: cookie } })).status).toBe(405);
    expect((await sessionsOf(userId))[0]!.revoked).toBeNull();
    const res = await logout(cookie, "", { "Accept-Language": "sv" });
    expect(await res.text()).toContain("<h1>Du är utloggad</h1>");
  });
});
