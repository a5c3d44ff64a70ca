/**
 * The password throttle's policy (src/oauth/password-sign-in.ts), through the login page and the
 * token endpoint, with the network each request comes from in CF-Connecting-IP.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { Browser, expectPage, redirectParameters } from "./helpers/browser";
import { basicAuth, postForm } from "./helpers/http";
import { mailbox } from "./helpers/mailbox";
import { createClient, createUser } from "./helpers/seed";

const CALLBACK = "https://test.example/callback";

let nextUser = 9_700 + Math.floor(Math.random() * 40) * 10;

function shop() {
  return createClient({ grantTypes: ["authorization_code", "password"], autoApprove: true });
}

/** A browser on `ip`'s network with the client's login page open. */
async function browserAt(ip: string, clientId: string): Promise<{ browser: Browser; page: string }> {
  const browser = new Browser({ "CF-Connecting-IP": ip });
  const query = new URLSearchParams({ client_id: clientId, redirect_uri: CALLBACK, response_type: "code" });
  const page = await expectPage(await browser.get(`/oauth/authorize?${query}`), 200, "Sign in");
  return { browser, page };
}

function logIn({ browser, page }: { browser: Browser; page: string }, email: string, password: string) {
  return browser.submit(page, { action: "login", email, password });
}

/** The client (autoApprove) sends the signed-in person back with a code. */
function expectSignedIn(res: Response) {
  expect(redirectParameters(res).params.get("code")).toBeTruthy();
}

async function expectHeld(res: Response): Promise<number> {
  await expectPage(res, 429, "Sign in");
  return Number(res.headers.get("Retry-After"));
}

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe("password guessing at one account", () => {
  it("holds a stranger's network after 5 failures, and lets the owner in from their own at once", async () => {
    const client = await shop();
    const owner = await createUser(nextUser++);
    const stranger = await browserAt("203.0.113.7", client.id);
    for (let i = 0; i < 5; i++) await expectPage(await logIn(stranger, owner.email, `guess ${i}`), 401, "Sign in");
    // Held for the rest of the window, even with the right password: no hash is computed.
    const retryAfter = await expectHeld(await logIn(stranger, owner.email, owner.password));
    expect(retryAfter).toBeGreaterThan(60);
    expect(retryAfter).toBeLessThanOrEqual(900);

    expectSignedIn(await logIn(await browserAt("198.51.100.20", client.id), owner.email, owner.password));
  });

  it("slows guesses from many networks by a wait that doubles to 60 s, sparing the network the owner signed in from", async () => {
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() });
    const client = await shop();
    const owner = await createUser(nextUser++);
    const home = await browserAt("198.51.100.20", client.id);
    expectSignedIn(await logIn(home, owner.email, owner.password));

    const strangers = await Promise.all([0, 1, 2, 3].map((n) => browserAt(`203.0.113.${n}`, client.id)));
    const waits = [];
    for (let failure = 0; failure < 20; failure++) {
      const stranger = strangers[Math.floor(failure / 5)]!;
      let res = await logIn(stranger, owner.email, `guess ${failure}`);
      if (res.status === 429) {
        const wait = await expectHeld(res);
        waits.push(wait);
        vi.setSystemTime(Date.now() + wait * 1000);
        res = await logIn(stranger, owner.email, `guess ${failure}`);
      }
      await expectPage(res, 401, "Sign in");
    }
    // Ten failures from two networks cost no wait; each one after doubles it, up to a minute.
    expect(waits).toEqual([1, 2, 4, 8, 16, 32, 60, 60, 60, 60]);

    // A new network waits a minute at most, the right password too; the owner's does not wait.
    expect(await expectHeld(await logIn(await browserAt("192.0.2.80", client.id), owner.email, owner.password))).toBe(
      60,
    );
    expectSignedIn(await logIn(home, owner.email, owner.password));
  });

  it(
    "signs the owner in with an e-mailed link while their password attempts are held",
    { timeout: 20_000 },
    async () => {
      const client = await shop();
      const owner = await createUser(nextUser++);
      const mail = mailbox();
      const at = await browserAt("203.0.113.9", client.id);
      for (let i = 0; i < 5; i++) await expectPage(await logIn(at, owner.email, `guess ${i}`), 401, "Sign in");
      await expectHeld(await logIn(at, owner.email, owner.password));

      const sent = await at.browser.submit(at.page, { action: "link", email: owner.email });
      await expectPage(sent, 200, "Check your e-mail");
      const link = await mail.link(owner.email);
      const confirmation = await expectPage(await at.browser.get(link), 200, "Confirm sign-in");
      expectSignedIn(await at.browser.submit(confirmation, {}));
    },
  );
});

describe("password spraying from one network", () => {
  it("holds a browser's network (an IPv6 /64 as one) after 30 failures for any accounts, refusing even a right password", async () => {
    const client = await shop();
    const [sprayer, victim] = [await createUser(nextUser++), await createUser(nextUser++)];
    const inNetwork = (n: number) => browserAt(`2001:db8:5:6::${n.toString(16)}`, client.id);
    for (let n = 0; n < 29; n++) {
      await expectPage(await logIn(await inNetwork(n), `sprayed-${n}@example.org`, "Summer2024!"), 401, "Sign in");
    }
    // A right password takes back its own attempt, nothing more: an account of one's own buys no guesses.
    expectSignedIn(await logIn(await inNetwork(100), sprayer.email, sprayer.password));
    await expectPage(await logIn(await inNetwork(29), "sprayed-29@example.org", "Summer2024!"), 401, "Sign in");

    expect(await expectHeld(await logIn(await inNetwork(200), victim.email, victim.password))).toBeGreaterThan(60);
    await expectHeld(await logIn(await inNetwork(201), sprayer.email, sprayer.password));
    expectSignedIn(await logIn(await browserAt("2001:db8:5:7::1", client.id), victim.email, victim.password));
  });

  it(
    "holds a client's server at the token endpoint after 300 failures, refusing even a right password",
    { timeout: 60_000 },
    async () => {
      const client = await shop();
      const user = await createUser(nextUser++, { clients: [client.id] });
      const grant = (username: string, password: string) =>
        postForm(
          "/oauth/token",
          { grant_type: "password", username, password, redirect_uri: CALLBACK },
          { ...basicAuth(client.id, client.secret), "CF-Connecting-IP": "192.0.2.50" },
        );
      for (let n = 0; n < 300; n++) expect((await grant(`sprayed-${n}@example.org`, "Summer2024!")).status).toBe(400);

      const res = await grant(user.email, user.password);
      expect(res.status).toBe(420);
      expect(await res.json()).toMatchObject({
        error: "access_denied",
        error_description: "Rate limit exceeded: too many failed sign-in attempts; try again later",
      });
      expect(Number(res.headers.get("Retry-After"))).toBeGreaterThan(60);
    },
  );
});
