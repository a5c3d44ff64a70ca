import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { openDatabase } from "../src/db/client";
import { userClients, users } from "../src/db/schema";
import { s256Challenge } from "../src/kv/codes";
import worker from "../src/index";
import { Browser, expectPage, hiddenFields, redirectParameters } from "./helpers/browser";
import { BASE, basicAuth, bearer, call, container, postForm, serverToken, userToken } from "./helpers/http";
import { mailbox } from "./helpers/mailbox";
import { createClient, createUser } from "./helpers/seed";

const CALLBACK = "https://test.example/callback";
const CREATED = "Signin request created and sent";

let nextUser = 9_500 + Math.floor(Math.random() * 40) * 10;

async function shop(overrides: Record<string, unknown> = {}) {
  const client = await createClient({
    name: "Fjord Shop",
    grantTypes: ["client_credentials", "authorization_code", "password"],
    autoApprove: true,
    ...overrides,
  });
  return { ...client, token: await serverToken(client) };
}

function requestLink(token: string, fields: Record<string, string>) {
  return postForm("/api/2/signin", fields, bearer(token));
}

async function expectFailure(res: Response, status: number, description: string) {
  const body = await container(res);
  expect(res.status).toBe(status);
  expect(body.error).toMatchObject({ error_code: status, error_description: description });
}

/** Opens the link in a browser and confirms it. */
async function confirm(browser: Browser, link: string) {
  const page = await expectPage(await browser.get(link), 200, "Confirm sign-in");
  return { page, res: await browser.submit(page, {}) };
}

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe("POST /api/2/signin", () => {
  it("mails a link that signs a registered user in and brings them back with a code", async () => {
    const client = await shop();
    const user = await createUser(nextUser++, { clients: [client.id] });
    const mail = mailbox();
    const res = await requestLink(client.token, {
      identifier: user.email,
      redirectUri: CALLBACK,
      context: "Your order 1234",
    });
    expect(res.status).toBe(201);
    const body = await container(res);
    expect(body.data).toBe(CREATED);

    const link = await mail.link(user.email);
    const browser = new Browser();
    const { page, res: confirmed } = await confirm(browser, link);
    expect(page).toContain("Your order 1234");
    const { base, params } = redirectParameters(confirmed);
    expect(base).toBe(CALLBACK);
    // A remembered session (remember defaults to 1): 30 days, kept across restarts.
    expect(confirmed.headers.getSetCookie().find((c) => c.startsWith("__Host-session="))).toContain("Max-Age=2592000");
    const tokens = await postForm(
      "/oauth/token",
      { grant_type: "authorization_code", code: params.get("code")!, redirect_uri: CALLBACK },
      basicAuth(client.id, client.secret),
    );
    expect(((await tokens.json()) as { user_id: string }).user_id).toBe(user.row.userId);

    // The mail is in the history with its `sent` event; its token is not the link's.
    const history = await container(await call(`/api/2/mail?id=${user.row.userId}`, { headers: bearer(client.token) }));
    const [sent] = history.data;
    expect(sent).toMatchObject({ template: "signin", userEmail: user.email, events: [{ event: "sent" }] });
    expect(link).not.toContain(sent.token);
    // The link worked once.
    const again = await new Browser().get(link);
    await expectPage(again, 410, "This link no longer works");
  });

  it("makes an unverified user of an address without one, connected to the client by its code, with its mail", async () => {
    const client = await shop();
    const email = `new-${crypto.randomUUID()}@example.org`;
    const mail = mailbox();
    expect((await requestLink(client.token, { identifier: email, redirectUri: CALLBACK, remember: "0" })).status).toBe(
      201,
    );
    const { res } = await confirm(new Browser(), await mail.link(email));
    const { params } = redirectParameters(res);
    const tokens = await postForm(
      "/oauth/token",
      { grant_type: "authorization_code", code: params.get("code")!, redirect_uri: CALLBACK },
      basicAuth(client.id, client.secret),
    );
    expect(tokens.status).toBe(200);
    // Not remembered: the cookie ends with the browser.
    expect(res.headers.getSetCookie().find((c) => c.startsWith("__Host-session="))).not.toContain("Max-Age");
    const db = openDatabase(env.DB);
    const created = await db.select().from(users).where(eq(users.email, email)).get();
    expect(created).toMatchObject({ status: 0 });
    expect(created!.emailVerified).not.toBeNull();
    const connections = await db.select().from(userClients).where(eq(userClients.userId, created!.id)).all();
    expect(connections.map((c) => c.clientId)).toEqual([client.id]);
    const history = await container(await call(`/api/2/mail?id=${created!.id}`, { headers: bearer(client.token) }));
    expect(history.data).toHaveLength(1);
  });

  it("keeps one live link per address: a new one replaces the last, and a second within a minute is a 409", async () => {
    const client = await shop();
    const user = await createUser(nextUser++, { clients: [client.id] });
    const mail = mailbox();
    const now = Date.now();
    vi.useFakeTimers({ toFake: ["Date"], now });
    expect((await requestLink(client.token, { identifier: user.email, redirectUri: CALLBACK })).status).toBe(201);
    const first = await mail.link(user.email);
    const openedEarly = new Browser();
    const earlyPage = await expectPage(await openedEarly.get(first), 200, "Confirm sign-in");
    await expectFailure(
      await requestLink(client.token, { identifier: user.email, redirectUri: CALLBACK }),
      409,
      "Signin request could not be created",
    );
    vi.setSystemTime(now + 50_000);
    await expectFailure(
      await requestLink(client.token, { identifier: user.email, redirectUri: CALLBACK }),
      409,
      "Signin request could not be created",
    );
    vi.setSystemTime(now + 61_000);
    expect((await requestLink(client.token, { identifier: user.email, redirectUri: CALLBACK })).status).toBe(201);
    const second = await mail.link(user.email);
    expect(second).not.toBe(first);
    await expectPage(await new Browser().get(first), 410, "This link no longer works");
    // Confirming the replaced link from a page opened before the replacement fails too.
    await expectPage(await openedEarly.submit(earlyPage, {}), 410, "This link no longer works");
    expect(openedEarly.cookies.has("__Host-session")).toBe(false);
    redirectParameters((await confirm(new Browser(), second)).res);
  });

  it("expires a link after 5 minutes, judged in code", async () => {
    const client = await shop();
    const user = await createUser(nextUser++, { clients: [client.id] });
    const mail = mailbox();
    const now = Date.now();
    vi.useFakeTimers({ toFake: ["Date"], now });
    await requestLink(client.token, { identifier: user.email, redirectUri: CALLBACK });
    const link = await mail.link(user.email);
    const browser = new Browser();
    vi.setSystemTime(now + 299_000);
    const page = await expectPage(await browser.get(link), 200, "Confirm sign-in");
    vi.setSystemTime(now + 300_000);
    await expectPage(await browser.submit(page, {}), 410, "This link has expired");
    await expectPage(await browser.get(link), 410, "This link has expired");
    expect(browser.cookies.has("__Host-session")).toBe(false);
  });

  it("answers an unknown, malformed or overlong token with a page, never a login", async () => {
    for (const token of ["", "not-a-token", "x".repeat(65), "a".repeat(43)]) {
      const res = await new Browser().get(`/oauth/signin?token=${token}`);
      await expectPage(res, 400, "This link does not work");
    }
    const notForm = await call("/oauth/signin", {
      method: "POST",
      body: "{}",
      headers: { "Content-Type": "application/json" },
    });
    await expectPage(notForm, 400, "This link does not work");
  });

  it("never spends a link by opening it, nor takes a confirmation without the page's CSRF token", async () => {
    const client = await shop();
    const user = await createUser(nextUser++, { clients: [client.id] });
    const mail = mailbox();
    await requestLink(client.token, { identifier: user.email, redirectUri: CALLBACK });
    const link = await mail.link(user.email);
    await new Browser().get(link);
    await new Browser().get(link);
    const token = new URL(`https://x${link}`).searchParams.get("token")!;
    const forged = await new Browser().post("/oauth/signin", { token });
    await expectPage(forged, 400, "This link does not work");
    expect(forged.headers.getSetCookie().some((c) => c.includes("session="))).toBe(false);
    redirectParameters((await confirm(new Browser(), link)).res);
  });

  it("answers each of the spec's failures with its text and status", async () => {
    const client = await shop();
    const blocked = await createUser(nextUser++, { clients: [client.id], status: -2 });
    const inactive = await createUser(nextUser++, { clients: [client.id], status: -1 });
    const cases: [Record<string, string>, number, string][] = [
      [{ redirectUri: CALLBACK }, 400, "Required identifier parameter is missing"],
      [{ identifier: "not an address", redirectUri: CALLBACK }, 400, "Required identifier parameter is invalid"],
      [{ identifier: "a@example.org" }, 400, "Required redirectUri parameter is missing"],
      [
        { identifier: "a@example.org", redirectUri: "https://evil.example/cb" },
        400,
        "Required redirectUri parameter is invalid or not matching requesting client",
      ],
      [
        { identifier: "a@example.org", redirectUri: CALLBACK, remember: "yes" },
        400,
        "Signin request could not be created",
      ],
      [{ identifier: blocked.email, redirectUri: CALLBACK }, 302, "The email address is blocked"],
      [{ identifier: inactive.email, redirectUri: CALLBACK }, 400, "Signin request could not be created"],
    ];
    for (const [fields, status, description] of cases) {
      await expectFailure(await requestLink(client.token, fields), status, description);
    }
    // A redirect URI registered for another client is not the caller's.
    await createClient({ redirectUris: ["https://other.example/cb"] });
    await expectFailure(
      await requestLink(client.token, { identifier: "a@example.org", redirectUri: "https://other.example/cb" }),
      400,
      "Required redirectUri parameter is invalid or not matching requesting client",
    );
  });

  it("gives a public client no code, since none could be redeemed without PKCE", async () => {
    const app = await shop({ public: true });
    const user = await createUser(nextUser++, { clients: [app.id] });
    const mail = mailbox();
    await requestLink(app.token, { identifier: user.email, redirectUri: CALLBACK });
    const { params } = redirectParameters((await confirm(new Browser(), await mail.link(user.email))).res);
    expect(params.get("code")).toBeNull();
    expect(params.get("error")).toBe("invalid_request");
  });

  it("asks for consent before a client that needs it gets a code for a user never connected to it", async () => {
    const client = await shop({ autoApprove: false });
    const user = await createUser(nextUser++, { clients: [] });
    const mail = mailbox();
    expect((await requestLink(client.token, { identifier: user.email, redirectUri: CALLBACK })).status).toBe(201);
    const browser = new Browser();
    const consent = await expectPage((await confirm(browser, await mail.link(user.email))).res, 200, "Allow access");
    expect(consent).toContain("Fjord Shop asks for access to your account.");
    const db = openDatabase(env.DB);
    const connections = () =>
      db
        .select()
        .from(userClients)
        .where(eq(userClients.userId, Number(user.row.userId)))
        .all();
    expect(await connections()).toEqual([]);
    const { base, params } = redirectParameters(await browser.submit(consent, { action: "approve" }));
    expect(base).toBe(CALLBACK);
    expect(params.get("code")).toBeTruthy();
    expect((await connections()).map((c) => c.clientId)).toEqual([client.id]);
  });

  it("lets a denial go back to the client as access_denied, with no code and no connection", async () => {
    const client = await shop({ autoApprove: false });
    const user = await createUser(nextUser++, { clients: [] });
    const mail = mailbox();
    await requestLink(client.token, { identifier: user.email, redirectUri: CALLBACK });
    const browser = new Browser();
    const consent = await (await confirm(browser, await mail.link(user.email))).res.text();
    const { params } = redirectParameters(await browser.submit(consent, { action: "deny" }));
    expect(params.get("error")).toBe("access_denied");
    expect(params.get("code")).toBeNull();
  });

  it("names the client that asked for the link on the confirmation page", async () => {
    const client = await shop({ name: "Nordlys Bokhandel" });
    const user = await createUser(nextUser++, { clients: [client.id] });
    const mail = mailbox();
    await requestLink(client.token, { identifier: user.email, redirectUri: CALLBACK, locale: "nb_NO" });
    const page = await expectPage(await new Browser().get(await mail.link(user.email)), 200, "Bekreft innlogging");
    expect(page).toContain("Logge inn på Nordlys Bokhandel med denne lenken?");
    expect(page).toContain(`Den logger inn som ${user.email}.`);
  });

  it("says on the confirmation page whom a browser signed in as someone else signs out", async () => {
    const client = await shop();
    const [owner, other] = [await createUser(nextUser++), await createUser(nextUser++)];
    const mail = mailbox();
    const browser = new Browser();
    await requestLink(client.token, { identifier: other.email, redirectUri: CALLBACK });
    redirectParameters((await confirm(browser, await mail.link(other.email))).res);
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 61_000 });
    await requestLink(client.token, { identifier: owner.email, redirectUri: CALLBACK });
    const page = await expectPage(await browser.get(await mail.link(owner.email)), 200, "Confirm sign-in");
    expect(page).toContain(`It signs in as ${owner.email}.`);
    expect(page).toContain(`This browser is signed in as ${other.email}, who will be signed out here.`);
    // Its own account's link says nothing of the kind.
    await requestLink(client.token, { identifier: other.email, redirectUri: CALLBACK });
    const own = await expectPage(await browser.get(await mail.link(other.email)), 200, "Confirm sign-in");
    expect(own).not.toContain("signed out here");
  });

  it("leaves a link unspent, and starts no session, when its client no longer has its redirect URI", async () => {
    const other = "https://test.example/other";
    const client = await shop({ redirectUris: [CALLBACK, other] });
    const reimport = (redirectUris: string[]) =>
      createClient({
        id: client.id,
        secret: client.secret,
        name: "Fjord Shop",
        grantTypes: ["client_credentials", "authorization_code", "password"],
        autoApprove: true,
        redirectUris,
      });
    const user = await createUser(nextUser++, { clients: [client.id] });
    const mail = mailbox();
    await requestLink(client.token, { identifier: user.email, redirectUri: CALLBACK });
    const link = await mail.link(user.email);
    const browser = new Browser();
    const page = await expectPage(await browser.get(link), 200, "Confirm sign-in");
    await reimport([other]);
    await expectPage(await browser.get(link), 400, "This link does not work");
    await expectPage(await browser.submit(page, {}), 400, "This link does not work");
    expect(browser.cookies.has("__Host-session")).toBe(false);
    // Given its URI back, the client's link works: it was not spent.
    await reimport([CALLBACK, other]);
    redirectParameters(await browser.submit(page, {}));
  });

  it("mails a link for an account to its primary or a verified address only, never to an unverified one", async () => {
    const client = await shop();
    const id = nextUser++;
    const primary = `primary-${id}@example.org`;
    const verified = `verified-${id}@example.org`;
    const unverified = `unverified-${id}@example.org`;
    await createUser(id, {
      email: primary,
      emails: [
        { value: primary, primary: true, verified: false },
        { value: verified, verified: true },
        { value: unverified, verified: false },
      ],
      clients: [client.id],
    });
    const mail = mailbox();
    await expectFailure(
      await requestLink(client.token, { identifier: unverified, redirectUri: CALLBACK }),
      400,
      "Signin request could not be created",
    );
    expect(mail.printed()).not.toContain(`mail to ${unverified}:`);
    expect((await requestLink(client.token, { identifier: primary, redirectUri: CALLBACK })).status).toBe(201);
    const { params } = redirectParameters((await confirm(new Browser(), await mail.link(primary))).res);
    expect(params.get("code")).toBeTruthy();
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 61_000 });
    expect((await requestLink(client.token, { identifier: verified, redirectUri: CALLBACK })).status).toBe(201);
    redirectParameters((await confirm(new Browser(), await mail.link(verified))).res);
  });

  it("keeps one live link per user, across the user's addresses", async () => {
    const client = await shop();
    const id = nextUser++;
    const home = `home-${id}@example.org`;
    const work = `work-${id}@example.org`;
    await createUser(id, {
      email: home,
      emails: [
        { value: home, primary: true, verified: true },
        { value: work, verified: true },
      ],
      clients: [client.id],
    });
    const mail = mailbox();
    const now = Date.now();
    vi.useFakeTimers({ toFake: ["Date"], now });
    expect((await requestLink(client.token, { identifier: home, redirectUri: CALLBACK })).status).toBe(201);
    const first = await mail.link(home);
    // The other address is the same user: within a minute, too soon; after, it replaces the first link.
    await expectFailure(
      await requestLink(client.token, { identifier: work, redirectUri: CALLBACK }),
      409,
      "Signin request could not be created",
    );
    vi.setSystemTime(now + 61_000);
    expect((await requestLink(client.token, { identifier: work, redirectUri: CALLBACK })).status).toBe(201);
    await expectPage(await new Browser().get(first), 410, "This link no longer works");
    redirectParameters((await confirm(new Browser(), await mail.link(work))).res);
  });

  it("takes a server token only", async () => {
    const client = await shop();
    const user = await createUser(nextUser++, { clients: [client.id] });
    const token = await userToken(user, { ...client, redirectUris: [CALLBACK] });
    const res = await requestLink(token, { identifier: user.email, redirectUri: CALLBACK });
    expect(res.status).toBe(403);
  });
});

describe("the mailer's HTTP provider", () => {
  async function withProvider(answer: () => Promise<Response>) {
    const client = await shop();
    const user = await createUser(nextUser++, { clients: [client.id] });
    const realFetch = globalThis.fetch;
    const provider = vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      const url = input instanceof Request ? input.url : String(input);
      return url.startsWith("https://mail.provider.test/") ? answer() : realFetch(input, init);
    });
    const configured = { ...env, MAIL_API_URL: "https://mail.provider.test/send", MAIL_API_KEY: "provider-key" };
    const res = await worker.fetch(
      new Request("https://accounts.test/api/2/signin", {
        method: "POST",
        headers: { ...bearer(client.token), "Content-Type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ identifier: user.email, redirectUri: CALLBACK }).toString(),
      }),
      configured,
      createExecutionContext(),
    );
    const history = await container(await call(`/api/2/mail?id=${user.row.userId}`, { headers: bearer(client.token) }));
    return { res, provider, history: history.data, user, client };
  }

  it("posts the message with the key, and records it as sent", async () => {
    const { res, provider, history, user } = await withProvider(async () => new Response(null, { status: 202 }));
    expect(res.status).toBe(201);
    const [url, init] = provider.mock.calls.find(([input]) => String(input).startsWith("https://mail.provider"))!;
    expect(String(url)).toBe("https://mail.provider.test/send");
    expect(new Headers(init!.headers).get("Authorization")).toBe("Bearer provider-key");
    const message = JSON.parse(String(init!.body));
    expect(message).toMatchObject({ to: user.email, subject: "Your sign-in link for Fjord Shop" });
    expect(message.text).toContain("https://accounts.test/oauth/signin?token=");
    expect(history[0].events).toEqual([expect.objectContaining({ event: "sent" })]);
  });

  it("records a refusal as a failed mail and answers 400, never a 500, with no live link left", async () => {
    const { res, history, user, client } = await withProvider(async () => new Response("quota", { status: 500 }));
    expect(res.status).toBe(400);
    expect((await container(res)).error?.error_description).toBe("Signin request could not be created");
    expect(history[0]).toMatchObject({ template: "signin", events: [expect.objectContaining({ event: "failed" })] });
    // The failed request left no live link behind: asking again at once is not "too soon".
    expect((await requestLink(client.token, { identifier: user.email, redirectUri: CALLBACK })).status).toBe(201);
  });

  it("records an unreachable provider the same way", async () => {
    const { res, history } = await withProvider(async () => {
      throw new TypeError("network down");
    });
    expect(res.status).toBe(400);
    expect(history[0].events[0].event).toBe("failed");
  });
});

describe("the login page's sign-in link", () => {
  it("mails a link that finishes the authorization request: its state, its PKCE challenge", async () => {
    const client = await shop({ grantTypes: ["client_credentials", "authorization_code"] });
    const user = await createUser(nextUser++, { clients: [client.id] });
    const mail = mailbox();
    const verifier = "v".repeat(50);
    const query = new URLSearchParams({
      client_id: client.id,
      redirect_uri: CALLBACK,
      response_type: "code",
      state: "from-the-page",
      code_challenge: await s256Challenge(verifier),
      code_challenge_method: "S256",
    });
    const browser = new Browser();
    const login = await (await browser.get(`/oauth/authorize?${query}`)).text();
    const sent = await browser.submit(login, { action: "link", email: user.email });
    await expectPage(sent, 200, "Check your e-mail");
    const { res } = await confirm(new Browser(), await mail.link(user.email));
    const { params } = redirectParameters(res);
    expect(params.get("state")).toBe("from-the-page");
    const tokens = await postForm(
      "/oauth/token",
      { grant_type: "authorization_code", code: params.get("code")!, redirect_uri: CALLBACK, code_verifier: verifier },
      basicAuth(client.id, client.secret),
    );
    expect(tokens.status).toBe(200);
  });

  it("asks for consent on use where the client needs it, and connects the user only on approval", async () => {
    const client = await shop({ grantTypes: ["client_credentials", "authorization_code"], autoApprove: false });
    const email = `consent-${crypto.randomUUID()}@example.org`;
    const mail = mailbox();
    const query = `client_id=${client.id}&redirect_uri=${encodeURIComponent(CALLBACK)}&response_type=code&state=s1`;
    const browser = new Browser();
    const login = await (await browser.get(`/oauth/authorize?${query}`)).text();
    await browser.submit(login, { action: "link", email });
    const { res } = await confirm(browser, await mail.link(email));
    const consent = await expectPage(res, 200, "Allow access");
    const db = openDatabase(env.DB);
    const created = (await db.select().from(users).where(eq(users.email, email)).get())!;
    const connectionsOf = () => db.select().from(userClients).where(eq(userClients.userId, created.id)).all();
    expect(await connectionsOf()).toEqual([]);
    const { params } = redirectParameters(await browser.submit(consent, { action: "approve" }));
    expect(params.get("state")).toBe("s1");
    expect((await connectionsOf()).map((c) => c.clientId)).toEqual([client.id]);
  });

  it("holds one network (an IPv6 /64 as one) to 20 links per client in 15 minutes", async () => {
    const client = await shop({ grantTypes: ["client_credentials", "authorization_code"] });
    const query = `client_id=${client.id}&redirect_uri=${encodeURIComponent(CALLBACK)}&response_type=code`;
    const login = await (await new Browser().get(`/oauth/authorize?${query}`)).text();
    for (let i = 0; i < 20; i++) {
      // Every request from another address of the same /64.
      const browser = new Browser({ "CF-Connecting-IP": `2001:db8:7:8::${(i + 1).toString(16)}` });
      const page = await (await browser.get(`/oauth/authorize?${query}`)).text();
      const sent = await browser.submit(page, {
        action: "link",
        email: `burst-${i}-${crypto.randomUUID()}@example.org`,
      });
      expect(sent.status).toBe(200);
    }
    const browser = new Browser({ "CF-Connecting-IP": "2001:db8:7:8:ffff::1" });
    const refused = await browser.submit(await (await browser.get(`/oauth/authorize?${query}`)).text(), {
      action: "link",
      email: "one-more@example.org",
    });
    expect(await expectPage(refused, 429, "Sign in")).toContain("Too many attempts");
    expect(Number(refused.headers.get("Retry-After"))).toBeGreaterThan(0);
    // Another network is not held back.
    expect(login).toContain("Sign in");
    const other = new Browser({ "CF-Connecting-IP": "2001:db8:7:9::1" });
    const page = await (await other.get(`/oauth/authorize?${query}`)).text();
    expect((await other.submit(page, { action: "link", email: "one-more@example.org" })).status).toBe(200);
  });

  it("queues the request and answers: nothing for the address is done by the request, before or after answering", async () => {
    const client = await shop({ grantTypes: ["client_credentials", "authorization_code"] });
    const user = await createUser(nextUser++, { clients: [client.id] });
    const mail = mailbox();
    const query = `client_id=${client.id}&redirect_uri=${encodeURIComponent(CALLBACK)}&response_type=code`;
    const browser = new Browser();
    const login = await (await browser.get(`/oauth/authorize?${query}`)).text();
    const cookie = [...browser.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
    const ctx = createExecutionContext();
    const res = await worker.fetch(
      new Request(`${BASE}/oauth/authorize`, {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded", Cookie: cookie },
        body: new URLSearchParams({ ...hiddenFields(login), action: "link", email: user.email }),
      }),
      env,
      ctx,
    );
    // Everything the request left running has ended, and no mail went out from it: the address
    // that gets mail costs the request what a blocked one costs.
    await waitOnExecutionContext(ctx);
    await expectPage(res, 200, "Check your e-mail");
    expect(mail.printed()).not.toContain(`mail to ${user.email}:`);
    // The queue's consumer makes and mails the link.
    redirectParameters((await confirm(new Browser(), await mail.link(user.email))).res);
  });

  it("answers the same page for an unknown, blocked or unverified address, mailing only the unknown one", async () => {
    const client = await shop({ grantTypes: ["client_credentials", "authorization_code"] });
    const blocked = await createUser(nextUser++, { clients: [client.id], status: -2 });
    const id = nextUser++;
    const unverified = `secondary-${id}@example.org`;
    await createUser(id, {
      emails: [
        { value: `user${id}@example.org`, primary: true, verified: true },
        { value: unverified, verified: false },
      ],
    });
    const mail = mailbox();
    const query = `client_id=${client.id}&redirect_uri=${encodeURIComponent(CALLBACK)}&response_type=code`;
    const unknown = `nobody-${crypto.randomUUID()}@example.org`;
    for (const email of [blocked.email, unverified, unknown]) {
      const browser = new Browser();
      const login = await (await browser.get(`/oauth/authorize?${query}`)).text();
      await expectPage(await browser.submit(login, { action: "link", email }), 200, "Check your e-mail");
    }
    // The queue takes requests in order: the unknown address's mail went out after the others were
    // looked at, and none went to them.
    await mail.link(unknown);
    expect(mail.printed()).not.toContain(blocked.email);
    expect(mail.printed()).not.toContain(unverified);
  });
});
