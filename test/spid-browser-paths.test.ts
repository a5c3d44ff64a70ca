/**
 * SPiD's browser paths, as its SDKs and documentation build them: /flow/{auth,login,signup,signin}
 * and /logout. Each is GET /oauth/authorize or GET /oauth/logout under another name: the same
 * rules, the same pages.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { Browser, expectPage, redirectParameters } from "./helpers/browser";
import { basicAuth, call, postForm, serverToken } from "./helpers/http";
import { mailbox } from "./helpers/mailbox";
import { createClient, createUser } from "./helpers/seed";

const CALLBACK = "https://test.example/callback";
const CANCEL = "https://test.example/cancelled";

let nextUser = 9_620;

async function shop(overrides: Record<string, unknown> = {}) {
  return createClient({
    name: "Fjord Shop",
    redirectUris: [CALLBACK, CANCEL],
    grantTypes: ["client_credentials", "authorization_code"],
    autoApprove: true,
    enableSso: true,
    ...overrides,
  });
}

/** A flow URL as the PHP SDK's getFlowURI builds it (client_id, response_type, redirect_uri, v). */
function flowPath(flow: string, clientId: string, extra: Record<string, string> = {}) {
  const query = new URLSearchParams({
    client_id: clientId,
    response_type: "code",
    redirect_uri: CALLBACK,
    v: "2.5.2",
    state: "spid-state",
    ...extra,
  });
  return `/flow/${flow}?${query}`;
}

async function signIn(browser: Browser, path: string, user: { email: string; password: string }, title = "Sign in") {
  const page = await expectPage(await browser.get(path), 200, title);
  return browser.submit(page, { action: "login", email: user.email, password: user.password, remember: "1" });
}

afterEach(() => vi.restoreAllMocks());

describe("GET /flow/login and /flow/auth", () => {
  it.each(["login", "auth"])("/flow/%s opens the login page and ends with a code at the redirect URI", async (flow) => {
    const client = await shop();
    const user = await createUser(nextUser++, { clients: [client.id] });
    const res = await signIn(new Browser(), flowPath(flow, client.id), user);
    const { base, params } = redirectParameters(res);
    expect(base).toBe(CALLBACK);
    expect(params.get("state")).toBe("spid-state");
    const tokens = await postForm(
      "/oauth/token",
      { grant_type: "authorization_code", code: params.get("code")!, redirect_uri: CALLBACK },
      basicAuth(client.id, client.secret),
    );
    expect(tokens.status).toBe(200);
  });

  it("renders the page in SPiD's locale parameter", async () => {
    const client = await shop();
    const page = await expectPage(
      await new Browser().get(flowPath("login", client.id, { locale: "nb_NO" })),
      200,
      "Logg inn",
    );
    expect(page).toContain('<html lang="nb-NO">');
  });

  it("passes a signed-in browser straight through, as /oauth/authorize does", async () => {
    const client = await shop();
    const user = await createUser(nextUser++, { clients: [client.id] });
    const browser = new Browser();
    redirectParameters(await signIn(browser, flowPath("login", client.id), user));
    const again = await browser.get(flowPath("auth", client.id, { state: "second" }));
    expect(redirectParameters(again).params.get("state")).toBe("second");
  });

  it.each([
    ["an unregistered redirect_uri", { redirect_uri: "https://evil.example/cb" }, "redirect_uri_mismatch"],
    ["a response_type other than code", { response_type: "token" }, "unsupported_response_type"],
    ["an unregistered cancel_redirect_uri", { cancel_redirect_uri: "https://evil.example/x" }, "redirect_uri_mismatch"],
    [
      "a cancel_redirect_uri beside failure_redirect_uri",
      { cancel_redirect_uri: CANCEL, failure_redirect_uri: CANCEL },
      "redirect_uri_mismatch",
    ],
  ])("applies the authorization endpoint's rules: %s fails", async (_, extra, error) => {
    const client = await shop({ defaultRedirectUri: CALLBACK });
    const res = await new Browser().get(flowPath("login", client.id, extra));
    const { base, params } = redirectParameters(res);
    expect(params.get("error")).toBe(error);
    // Never to the unregistered address.
    expect(base).toBe(CALLBACK);
  });

  it("sends a denied consent to the registered cancel_redirect_uri", async () => {
    const client = await shop({ autoApprove: false });
    const user = await createUser(nextUser++);
    const browser = new Browser();
    const consent = await expectPage(
      await signIn(browser, flowPath("login", client.id, { cancel_redirect_uri: CANCEL }), user),
      200,
      "Allow access",
    );
    const { base, params } = redirectParameters(await browser.submit(consent, { action: "deny" }));
    expect(base).toBe(CANCEL);
    expect(params.get("error")).toBe("access_denied");
    expect(params.get("state")).toBe("spid-state");
  });

  it("shows an error page, never a redirect, for an unknown client; refuses HEAD; knows no other flow", async () => {
    await expectPage(await new Browser().get(flowPath("login", "no-such-client")), 400, "Sign-in cannot start");
    const client = await shop();
    expect((await call(flowPath("login", client.id), { method: "HEAD" })).status).toBe(405);
    expect((await call(flowPath("checkout", client.id))).status).toBe(404);
  });
});

describe("GET /flow/signup and /flow/signin", () => {
  it("/flow/signup opens the sign-up view: the e-mail alone, whose link makes the account and ends with a code", async () => {
    const client = await shop();
    const mail = mailbox();
    const email = `signup-${crypto.randomUUID()}@example.org`;
    const browser = new Browser();
    const page = await expectPage(await browser.get(flowPath("signup", client.id)), 200, "Create an account");
    expect(page).not.toContain('name="password"');
    expect(page).toContain('<input type="hidden" name="view" value="signup"/>');
    expect(page).toContain(">Create account</button>");
    const sent = await browser.submit(page, { action: "link", email });
    await expectPage(sent, 200, "Check your e-mail");
    const confirmation = await expectPage(await browser.get(await mail.link(email)), 200, "Confirm sign-in");
    const { base, params } = redirectParameters(await browser.submit(confirmation, {}));
    expect(base).toBe(CALLBACK);
    expect(params.get("state")).toBe("spid-state");
  });

  it("/flow/signup keeps its view when the form comes back with an error", async () => {
    const client = await shop();
    const browser = new Browser();
    const page = await expectPage(await browser.get(flowPath("signup", client.id)), 200, "Create an account");
    const again = await expectPage(await browser.submit(page, { action: "link", email: "" }), 400, "Create an account");
    expect(again).toContain("Enter your e-mail address.");
  });

  it("/flow/signup shows its view to a signed-in browser, where /flow/login passes it through", async () => {
    const client = await shop();
    const user = await createUser(nextUser++, { clients: [client.id] });
    const browser = new Browser();
    redirectParameters(await signIn(browser, flowPath("login", client.id), user));
    await expectPage(await browser.get(flowPath("signup", client.id)), 200, "Create an account");
  });

  it("/flow/signin opens the link view, with a way back to the password", async () => {
    const client = await shop();
    const page = await expectPage(
      await new Browser().get(flowPath("signin", client.id, { locale: "sv_SE" })),
      200,
      "Logga in med en länk",
    );
    expect(page).not.toContain('name="password"');
    const back = /<a href="([^"]+)">Logga in med lösenord i stället<\/a>/.exec(page)?.[1];
    expect(back).toBeDefined();
    const login = new URL(back!.replace(/&amp;/g, "&"), "https://accounts.test");
    expect(login.pathname).toBe("/oauth/authorize");
    expect(login.searchParams.get("view")).toBeNull();
    expect(login.searchParams.get("state")).toBe("spid-state");
    await expectPage(await new Browser().get(`${login.pathname}${login.search}`), 200, "Logga in");
  });

  it("refuses a view the flow does not have", async () => {
    const client = await shop({ defaultRedirectUri: CALLBACK });
    const res = await new Browser().get(flowPath("login", client.id, { view: "checkout" }));
    expect(redirectParameters(res).params.get("error")).toBe("invalid_request");
  });
});

describe("GET /logout", () => {
  it("goes to a redirect_uri registered for client_id when there is no session", async () => {
    const client = await shop();
    const res = await new Browser().get(`/logout?client_id=${client.id}&redirect_uri=${encodeURIComponent(CALLBACK)}`);
    expect(res.status).toBe(303);
    expect(res.headers.get("Location")).toBe(CALLBACK);
  });

  it("never follows an unregistered redirect_uri", async () => {
    const client = await shop();
    const res = await new Browser().get(`/logout?client_id=${client.id}&redirect_uri=https%3A%2F%2Fevil.example%2F`);
    await expectPage(res, 200, "You are signed out");
  });

  it("asks a signed-in browser first, and the answer signs it out", async () => {
    const client = await shop();
    const user = await createUser(nextUser++, { clients: [client.id] });
    const browser = new Browser();
    redirectParameters(await signIn(browser, flowPath("login", client.id), user));
    const page = await expectPage(
      await browser.get(`/logout?client_id=${client.id}&redirect_uri=${encodeURIComponent(CALLBACK)}`),
      200,
      "Sign out?",
    );
    const res = await browser.submit(page, {});
    expect(res.headers.get("Location")).toBe(CALLBACK);
    // Signed out: the login page again, no pass-through.
    await expectPage(await browser.get(flowPath("login", client.id)), 200, "Sign in");
  });

  it("takes the client from client_sdrn, as SPiD's browser SDK's logout URL names it", async () => {
    const client = await shop();
    const query = new URLSearchParams({
      client_sdrn: `sdrn:schibsted.com:client:${client.id}`,
      redirect_uri: CALLBACK,
      sdk_version: "5.1.1",
    });
    expect((await new Browser().get(`/logout?${query}`)).headers.get("Location")).toBe(CALLBACK);
    query.set("client_sdrn", `sdrn:schibsted.com:user:${client.id}`);
    await expectPage(await new Browser().get(`/logout?${query}`), 200, "You are signed out");
  });

  it("takes the client from oauth_token, as the PHP and Java SDKs' logout URLs name it", async () => {
    const client = await shop();
    const token = await serverToken(client);
    const res = await new Browser().get(`/logout?redirect_uri=${encodeURIComponent(CALLBACK)}&oauth_token=${token}`);
    expect(res.headers.get("Location")).toBe(CALLBACK);
    // A token that does not verify names no client.
    const forged = await new Browser().get(`/logout?redirect_uri=${encodeURIComponent(CALLBACK)}&oauth_token=x.y.z`);
    await expectPage(forged, 200, "You are signed out");
    // Nor does one longer than any token we issue.
    const long = `/logout?redirect_uri=${encodeURIComponent(CALLBACK)}&oauth_token=${"a".repeat(5000)}`;
    await expectPage(await new Browser().get(long), 200, "You are signed out");
    // Two tokens name no client either.
    const twice = `/logout?redirect_uri=${encodeURIComponent(CALLBACK)}&oauth_token=${token}&oauth_token=${token}`;
    await expectPage(await new Browser().get(twice), 200, "You are signed out");
  });
});
