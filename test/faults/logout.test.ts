/**
 * POST /oauth/logout under the platform's faults: each storage call failing, before or after it
 * was applied, answers the localized 503 page or the sign-out as usual; submitting again ends the
 * session, server-side. The back-channel notices are queued before the session ends, so a fault
 * there leaves the session for the retry, and the retry queues them.
 */
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { openDatabase } from "../../src/db/client";
import { sessions } from "../../src/db/schema";
import { Browser, expectPage, hiddenFields } from "../helpers/browser";
import { basicAuth, postForm } from "../helpers/http";
import { faultyEnv, fetchWith } from "../helpers/faults";
import { createClient, createUser } from "../helpers/seed";

const CALLBACK = "https://test.example/callback";
let nextUser = 9_900;

/**
 * A browser signed in on the login page of a fresh client (one that takes back-channel logout
 * notices when `backchannel`), and the page that asks to sign out.
 */
async function signedIn({ backchannel = false } = {}) {
  const client = await createClient({
    grantTypes: ["authorization_code"],
    redirectUris: [CALLBACK],
    autoApprove: true,
    ...(backchannel && { backchannelLogoutUri: `https://rp-${crypto.randomUUID().slice(0, 8)}.receiver.test/bc` }),
  });
  const userId = nextUser++;
  const user = await createUser(userId, { clients: [client.id] });
  const browser = new Browser();
  const query = new URLSearchParams({
    client_id: client.id,
    redirect_uri: CALLBACK,
    response_type: "code",
    ...(backchannel && { scope: "openid" }),
  });
  const login = await expectPage(await browser.get(`/oauth/authorize?${query}`), 200, "Sign in");
  const signedIn = await browser.submit(login, { action: "login", email: user.email, password: user.password });
  expect(signedIn.status).toBe(303);
  if (backchannel) {
    // The ID token's grant is what ties the client to the session.
    const code = new URL(signedIn.headers.get("Location")!).searchParams.get("code")!;
    const res = await postForm(
      "/oauth/token",
      { grant_type: "authorization_code", code, redirect_uri: CALLBACK },
      basicAuth(client.id, client.secret),
    );
    expect(res.status).toBe(200);
  }
  const ask = await expectPage(await browser.get("/oauth/logout"), 200, "Sign out?");
  return { browser, userId, form: hiddenFields(ask) };
}

async function liveSessions(userId: number) {
  const rows = await openDatabase(env.DB).select().from(sessions).where(eq(sessions.userId, userId)).all();
  return rows.filter((row) => row.revoked === null).length;
}

let log: ReturnType<typeof vi.spyOn>;
beforeAll(() => {
  log = vi.spyOn(console, "error").mockImplementation(() => {});
});
afterAll(() => log.mockRestore());

describe("POST /oauth/logout, a storage call failing", () => {
  it("reads the session's back-channel clients, queues their notices, then ends the session in one D1 write", async () => {
    const { browser, userId, form } = await signedIn({ backchannel: true });
    const { env: faulty, counts } = faultyEnv({});
    const res = await browser.via((path, init) => fetchWith(faulty, path, init)).post("/oauth/logout", form);
    expect(res.status).toBe(200);
    expect(await liveSessions(userId)).toBe(0);
    expect(counts.DB.calls).toBe(2);
    expect(counts.LOGOUT_NOTICES.calls).toBe(1);
    expect(counts.CODES.calls + counts.RATE_LIMITER.calls + counts.LINK_REQUESTS.calls).toBe(0);
  });

  it("the read of the back-channel clients failing once: retried, and signed out as usual", async () => {
    const { browser, userId, form } = await signedIn({ backchannel: true });
    const { env: faulty, counts } = faultyEnv({ DB: { kind: "nth", n: 1, applied: false } });
    const res = await browser.via((path, init) => fetchWith(faulty, path, init)).post("/oauth/logout", form);
    expect(counts.DB.failed).toBe(1);
    expect(res.status).toBe(200);
    expect(counts.LOGOUT_NOTICES.calls).toBe(1);
    expect(await liveSessions(userId)).toBe(0);
  });

  it.each([true, false])(
    "the write failing, applied: %s: a page that says try again, then signed out",
    async (applied) => {
      const { browser, userId, form } = await signedIn();
      const { env: faulty, counts } = faultyEnv({ DB: { kind: "nth", n: 2, applied } });
      const through = browser.via((path, init) => fetchWith(faulty, path, init));
      const res = await through.post("/oauth/logout", form);
      expect(counts.DB.failed).toBe(1);
      expect(res.headers.get("Retry-After")).toBe("1");
      await expectPage(res, 503, "We could not finish this just now");
      expect((await through.post("/oauth/logout", form)).status).toBe(200);
      expect(await liveSessions(userId)).toBe(0);
    },
  );

  it("the notices' queue down: the page that says try again, the session still live; the retry signs out", async () => {
    const { browser, userId, form } = await signedIn({ backchannel: true });
    const { env: faulty, counts } = faultyEnv({ LOGOUT_NOTICES: { kind: "outage" } });
    const through = browser.via((path, init) => fetchWith(faulty, path, init));
    await expectPage(await through.post("/oauth/logout", form), 503, "We could not finish this just now");
    expect(counts.LOGOUT_NOTICES.failed).toBeGreaterThan(0);
    expect(await liveSessions(userId)).toBe(1);
    expect((await browser.post("/oauth/logout", form)).status).toBe(200);
    expect(await liveSessions(userId)).toBe(0);
  });
});
