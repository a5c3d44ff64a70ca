/**
 * OpenID Connect RP-Initiated Logout and Back-Channel Logout at /oauth/logout, through the
 * Worker's HTTP surface and its queue consumer. Each case names the conformance-suite module
 * (oidcc-rp-initiated-logout-*, oidcc-backchannel-rp-initiated-logout) whose checks it makes.
 * The clients' back-channel endpoints are `*.receiver.test`, kept by vitest.config.ts.
 */
import { env } from "cloudflare:workers";
import { and, eq } from "drizzle-orm";
import {
  createLocalJWKSet,
  decodeJwt,
  generateKeyPair,
  type JSONWebKeySet,
  jwtVerify,
  SignJWT,
  UnsecuredJWT,
} from "jose";
import { afterEach, describe, expect, it, vi } from "vitest";
import { openDatabase } from "../src/db/client";
import { auditEvents } from "../src/db/schema";
import { Browser, expectPage, redirectParameters } from "./helpers/browser";
import { BASE, basicAuth, call, postForm } from "./helpers/http";
import { consumeBatch } from "./helpers/queues";
import {
  AFTER_LOGOUT,
  CALLBACK,
  DELIVERED_WITHIN,
  EVENT,
  logoutTokensAt,
  receivedAt,
  rpClient,
  signedIn,
} from "./helpers/relying-party";

function logoutPath(parameters: Record<string, string>) {
  return `/oauth/logout?${new URLSearchParams(parameters)}`;
}

/** prompt=none afterwards: the session is gone (login_required) or still there (a code). */
async function promptNone(browser: Browser, clientId: string) {
  const query = new URLSearchParams({
    client_id: clientId,
    redirect_uri: CALLBACK,
    response_type: "code",
    scope: "openid",
    prompt: "none",
  });
  return redirectParameters(await browser.get(`/oauth/authorize?${query}`)).params;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("RP-initiated logout", () => {
  it("ends the session at once for the client's own hint, back to its URI with state (oidcc-rp-initiated-logout)", async () => {
    const client = await rpClient();
    const { browser, idToken } = await signedIn(client);
    const res = await browser.get(
      logoutPath({ id_token_hint: idToken, post_logout_redirect_uri: AFTER_LOGOUT, state: "bye-1" }),
    );
    const { base, params } = redirectParameters(res);
    expect(base).toBe(AFTER_LOGOUT);
    expect([...params]).toEqual([["state", "bye-1"]]);
    expect((await promptNone(browser, client.id)).get("error")).toBe("login_required");
  });

  it("redirects without state when none was sent (oidcc-rp-initiated-logout-no-state)", async () => {
    const client = await rpClient();
    const { browser, idToken } = await signedIn(client);
    const res = await browser.get(logoutPath({ id_token_hint: idToken, post_logout_redirect_uri: AFTER_LOGOUT }));
    expect(res.headers.get("Location")).toBe(AFTER_LOGOUT);
  });

  it("signs out and shows the signed-out page without a return address (oidcc-rp-initiated-logout-no-post-logout-redirect-uri)", async () => {
    const client = await rpClient();
    const { browser, idToken } = await signedIn(client);
    await expectPage(await browser.get(logoutPath({ id_token_hint: idToken, state: "s" })), 200, "You are signed out");
    expect((await promptNone(browser, client.id)).get("error")).toBe("login_required");
  });

  it.each([
    [
      "oidcc-rp-initiated-logout-bad-post-logout-redirect-uri",
      { post_logout_redirect_uri: "https://rp.example/bad_post_logout_redirect_uri" },
    ],
    [
      "oidcc-rp-initiated-logout-query-added-to-post-logout-redirect-uri",
      { post_logout_redirect_uri: `${AFTER_LOGOUT}?foo=bar` },
    ],
    ["a redirect URI (not a post-logout one) as post_logout_redirect_uri", { post_logout_redirect_uri: CALLBACK }],
  ])("asks, and never redirects, for an unregistered return (%s)", async (_, extra) => {
    const client = await rpClient();
    const { browser, idToken } = await signedIn(client);
    const page = await expectPage(
      await browser.get(logoutPath({ id_token_hint: idToken, state: "s", ...extra })),
      200,
      "Sign out?",
    );
    expect(page).not.toContain("post_logout_redirect_uri");
    await expectPage(await browser.submit(page, {}), 200, "You are signed out");
    expect((await promptNone(browser, client.id)).get("error")).toBe("login_required");
  });

  it("asks for a hint that is not ours: unsigned, signed by the client, another client's, another session's", async () => {
    const client = await rpClient();
    const other = await rpClient();
    const { browser, idToken } = await signedIn(client);
    const claims = decodeJwt(idToken);
    const { privateKey } = await generateKeyPair("RS256");
    const otherSession = await signedIn(client);
    const hints = [
      // oidcc-rp-initiated-logout-modified-id-token-hint
      `${new UnsecuredJWT(claims).encode()}`,
      // oidcc-rp-initiated-logout-bad-id-token-hint: signed by the client, its own issuer
      await new SignJWT({ sub: claims.sub, nonce: "flibble" })
        .setProtectedHeader({ alg: "RS256" })
        .setIssuer(client.id)
        .setAudience(BASE)
        .setIssuedAt()
        .setExpirationTime("5m")
        .sign(privateKey),
      otherSession.idToken,
    ];
    for (const hint of hints) {
      const res = await browser.get(
        logoutPath({ id_token_hint: hint, post_logout_redirect_uri: AFTER_LOGOUT, state: "s" }),
      );
      expect(res.headers.get("Location")).toBeNull();
      await expectPage(res, 200, "Sign out?");
    }
    // client_id naming another client than the hint's audience: asked too.
    const mismatched = await browser.get(
      logoutPath({ id_token_hint: idToken, client_id: other.id, post_logout_redirect_uri: AFTER_LOGOUT }),
    );
    await expectPage(mismatched, 200, "Sign out?");
    // Nothing was ended by any of them.
    expect((await promptNone(browser, client.id)).get("code")).toBeTruthy();
  });

  it.each([
    ["oidcc-rp-initiated-logout-no-params", {}],
    ["oidcc-rp-initiated-logout-only-state", { state: "s" }],
    ["oidcc-rp-initiated-logout-no-id-token-hint", { post_logout_redirect_uri: AFTER_LOGOUT, state: "s" }],
  ])("asks without a hint, then signs out to the signed-out page (%s)", async (_, parameters) => {
    const client = await rpClient();
    const { browser } = await signedIn(client);
    const page = await expectPage(await browser.get(logoutPath(parameters)), 200, "Sign out?");
    await expectPage(await browser.submit(page, {}), 200, "You are signed out");
    expect((await promptNone(browser, client.id)).get("error")).toBe("login_required");
  });

  it("asks with client_id and a registered return, then goes there with state once confirmed", async () => {
    const client = await rpClient();
    const { browser } = await signedIn(client);
    const page = await expectPage(
      await browser.get(logoutPath({ client_id: client.id, post_logout_redirect_uri: AFTER_LOGOUT, state: "st" })),
      200,
      "Sign out?",
    );
    expect(redirectParameters(await browser.submit(page, {})).params.get("state")).toBe("st");
  });

  it("shows the page in ui_locales' language", async () => {
    const client = await rpClient();
    const { browser } = await signedIn(client);
    await expectPage(await browser.get(logoutPath({ ui_locales: "sv" })), 200, "Logga ut?");
  });
});

describe("back-channel logout (oidcc-backchannel-rp-initiated-logout)", () => {
  it("posts a signed logout token with the session's sid and the user's sub to each client of the session", async () => {
    const client = await rpClient();
    const second = await rpClient();
    const silent = await rpClient({ backchannelLogoutUri: null });
    const browser = new Browser();
    const { idToken } = await signedIn(client, browser);
    // Single sign-on into two more clients of the merchant: the same session, the same sid.
    for (const other of [second, silent]) {
      const query = new URLSearchParams({
        client_id: other.id,
        redirect_uri: CALLBACK,
        response_type: "code",
        scope: "openid",
      });
      const code = redirectParameters(await browser.get(`/oauth/authorize?${query}`)).params.get("code")!;
      await postForm(
        "/oauth/token",
        { grant_type: "authorization_code", code, redirect_uri: CALLBACK },
        basicAuth(other.id, other.secret),
      );
    }
    const res = await browser.get(
      logoutPath({ id_token_hint: idToken, post_logout_redirect_uri: AFTER_LOGOUT, state: "s" }),
    );
    expect(res.status).toBe(303);

    const keys = createLocalJWKSet((await (await call("/oauth/jwks")).json()) as JSONWebKeySet);
    const idClaims = decodeJwt(idToken);
    for (const rp of [client, second]) {
      const [form] = await vi.waitFor(async () => {
        const forms = await receivedAt(rp.backchannel);
        if (forms.length === 0) throw new Error("no logout token yet");
        return forms;
      }, DELIVERED_WITHIN);
      expect([...form!.keys()]).toEqual(["logout_token"]);
      const { payload, protectedHeader } = await jwtVerify(form!.get("logout_token")!, keys, {
        issuer: BASE,
        audience: rp.id,
      });
      expect(protectedHeader).toMatchObject({ alg: "RS256", typ: "logout+jwt" });
      expect(payload).toMatchObject({ sub: idClaims.sub, sid: idClaims.sid, events: { [EVENT]: {} } });
      expect(payload.jti).toEqual(expect.any(String));
      expect(payload.iat).toEqual(expect.any(Number));
      expect(payload).not.toHaveProperty("nonce");
    }
  });

  it("tells the session's clients when a new sign-in in the same browser replaces it", async () => {
    const client = await rpClient();
    const { browser } = await signedIn(client);
    await signedIn(client, browser, { prompt: "login" });
    expect(await logoutTokensAt(client.backchannel)).toEqual([expect.any(String)]);
  });

  it("sends nothing while the session lives, and nothing for a session that was asked about but not confirmed", async () => {
    const client = await rpClient();
    const { browser } = await signedIn(client);
    await expectPage(await browser.get(logoutPath({})), 200, "Sign out?");
    await new Promise((done) => setTimeout(done, 300));
    expect(await receivedAt(client.backchannel)).toEqual([]);
  });

  function notice(uri: string) {
    return { clientId: "c", uri, alg: "RS256", sub: crypto.randomUUID(), sid: "sid-1" };
  }

  it("acknowledges a delivered notice, retries one whose client is down (later each time), drops a malformed one", async () => {
    const id = crypto.randomUUID().slice(0, 8);
    const warnings = vi.spyOn(console, "warn").mockImplementation(() => {});
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const up = notice(`https://up-${id}.receiver.test/bc`);
    const down = notice(`https://down-${id}.receiver.test/down`);
    const result = await consumeBatch("account-commerce-logout-notices-local", [up, down, { clientId: 42 }], {
      attempts: 2,
    });
    expect(result.acked.sort()).toEqual(["m0", "m2"]);
    expect(result.retried).toEqual(["m1"]);
    // The second attempt waits twice the first's 10 seconds.
    expect(result.retryDelays.m1).toBe(20);
    expect(await receivedAt(up.uri)).toHaveLength(1);
    expect(warnings.mock.calls.join("\n")).toContain("refused: 503");
    expect(warnings.mock.calls.join("\n")).not.toContain("eyJ");
    expect(errors.mock.calls.join("\n")).toContain("not a logout notice");
  });

  it("after the last retry fails, records the failure in the client's merchant's audit trail and lets the notice go", async () => {
    const warnings = vi.spyOn(console, "warn").mockImplementation(() => {});
    const client = await rpClient();
    const down = { ...notice(`https://down-${client.id}.receiver.test/down`), clientId: client.id };
    const early = await consumeBatch("account-commerce-logout-notices-local", [down], { attempts: 6 });
    expect(early.retried).toEqual(["m0"]);
    const last = await consumeBatch("account-commerce-logout-notices-local", [down], { attempts: 7 });
    expect(last).toMatchObject({ acked: ["m0"], retried: [] });
    const [entry] = await openDatabase(env.DB)
      .select()
      .from(auditEvents)
      .where(and(eq(auditEvents.clientId, client.id), eq(auditEvents.action, "backchannel-logout.failed")))
      .all();
    expect(entry).toMatchObject({ actor: "service", merchantId: 10, detail: { attempts: 7, session: true } });
    warnings.mockRestore();
  });
});
