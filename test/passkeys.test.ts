/**
 * Passkeys and the account page (docs/factors.md): adding a passkey after a recent sign-in,
 * signing in with one on the login page, and every refusal (expired and replayed challenges,
 * another user's credential, a wrong relying party or origin, counters going backwards), through
 * the Worker's fetch with a software authenticator.
 */
import { env } from "cloudflare:workers";
import { and, eq } from "drizzle-orm";
import { base64url } from "jose";
import { Secret, TOTP } from "otpauth";
import { afterEach, describe, expect, it, vi } from "vitest";
import { openDatabase } from "../src/db/client";
import { auditEvents, passkeys, recoveryCodes, totpFactors } from "../src/db/schema";
import { passkeyForm, SoftwareAuthenticator } from "./helpers/authenticator";
import { Browser, expectPage, redirectParameters } from "./helpers/browser";
import { BASE, basicAuth, claimsOf, postForm } from "./helpers/http";
import { createClient, createUser } from "./helpers/seed";

const CALLBACK = "https://test.example/callback";
let nextUser = 45_000 + Math.floor(Math.random() * 40) * 20;
const db = () => openDatabase(env.DB);

async function client(overrides: Record<string, unknown> = {}) {
  return createClient({
    redirectUris: [CALLBACK],
    grantTypes: ["authorization_code", "refresh_token"],
    autoApprove: true,
    ...overrides,
  });
}

const authorizePath = (clientId: string, extra: Record<string, string> = {}) =>
  `/oauth/authorize?${new URLSearchParams({ client_id: clientId, redirect_uri: CALLBACK, response_type: "code", scope: "openid", state: "pk", ...extra })}`;

/** A user signed in with the password at a client, in `browser`. */
async function signedIn(browser = new Browser()) {
  const app = await client();
  const user = await createUser(nextUser++, { clients: [app.id] });
  const page = await expectPage(await browser.get(authorizePath(app.id)), 200, "Sign in");
  const res = await browser.submit(page, { action: "login", email: user.email, password: user.password });
  expect(res.status).toBe(303);
  return { app, user, userId: Number(user.row.userId), uuid: user.row.uuid, browser };
}

async function accountPage(browser: Browser, status = 200) {
  return expectPage(await browser.get("/oauth/account"), status, "Sign-in methods");
}

/** Adds a passkey made by `authenticator` through the account page; the page answered. */
async function addPasskey(browser: Browser, authenticator: SoftwareAuthenticator, name = "My phone", change = {}) {
  const { options, fields } = passkeyForm(await accountPage(browser), "create");
  const credential = await authenticator.register(options, { origin: BASE, ...change });
  return browser.post("/oauth/account", { ...fields, name, credential });
}

/** Signs in on the login page of `clientId` with the passkey; the answer. */
async function passkeySignIn(
  browser: Browser,
  clientId: string,
  authenticator: SoftwareAuthenticator,
  change: Parameters<SoftwareAuthenticator["assert"]>[1] | object = {},
) {
  const page = await expectPage(await browser.get(authorizePath(clientId)), 200, "Sign in");
  const { options, fields } = passkeyForm(page, "get");
  const credential = await authenticator.assert(options, { origin: BASE, ...change });
  return { res: await browser.post("/oauth/authorize", { ...fields, credential }), page, fields, options };
}

async function redeem(app: { id: string; secret: string }, res: Response) {
  const code = redirectParameters(res).params.get("code")!;
  const token = await postForm(
    "/oauth/token",
    { grant_type: "authorization_code", code, redirect_uri: CALLBACK },
    basicAuth(app.id, app.secret),
  );
  expect(token.status).toBe(200);
  return (await token.json()) as { id_token: string };
}

async function sha256Source(text: string) {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return `'sha256-${btoa(String.fromCharCode(...new Uint8Array(digest)))}'`;
}

afterEach(() => {
  vi.useRealTimers();
});

describe("adding a passkey on the account page", () => {
  it("asks a browser without a session to sign in first", async () => {
    const page = await accountPage(new Browser(), 401);
    expect(page).toContain("You are not signed in.");
  });

  it("adds a named passkey after a recent sign-in, lists it, and removes it", async () => {
    const { browser, userId, app } = await signedIn();
    const res = await accountPage(browser);
    expect(res).toContain("You have no passkeys yet.");
    const authenticator = await SoftwareAuthenticator.create();
    const added = await expectPage(await addPasskey(browser, authenticator, "Work laptop"), 200, "Sign-in methods");
    expect(added).toContain("The passkey was added.");
    expect(added).toContain("<strong>Work laptop</strong>");
    const [row] = await db().select().from(passkeys).where(eq(passkeys.userId, userId)).all();
    expect(row).toMatchObject({
      id: authenticator.credentialId,
      name: "Work laptop",
      counter: 0,
      backupEligible: true,
      backedUp: true,
      transports: ["internal"],
      clientId: app.id,
      lastUsed: null,
    });
    expect(JSON.parse(row!.publicKey)).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256" });
    // The same authenticator again is excluded by the browser; sent anyway, it is not added twice.
    const options = passkeyForm(await accountPage(browser), "create").options;
    expect(options.excludeCredentials).toEqual([
      { type: "public-key", id: authenticator.credentialId, transports: ["internal"] },
    ]);
    expect(options).toMatchObject({
      rp: { id: "accounts.test" },
      attestation: "none",
      authenticatorSelection: { residentKey: "required", userVerification: "required" },
    });

    const page = await accountPage(browser);
    const remove = await browser.submit(page, { action: "remove-passkey", passkey: authenticator.credentialId });
    expect(await expectPage(remove, 200, "Sign-in methods")).toContain("The passkey was removed.");
    expect(await db().select().from(passkeys).where(eq(passkeys.userId, userId)).all()).toEqual([]);
    const trail = await db()
      .select({ action: auditEvents.action })
      .from(auditEvents)
      .where(eq(auditEvents.userId, userId))
      .all();
    expect(trail.map((entry) => entry.action)).toEqual(
      expect.arrayContaining(["user.passkey.add", "user.passkey.remove"]),
    );
  });

  it("refuses a registration for a wrong relying party, origin, challenge or user, or without user verification", async () => {
    const { browser, userId } = await signedIn();
    const cases = [
      { rpId: "evil.test" },
      { origin: "https://evil.test" },
      { challenge: base64url.encode(crypto.getRandomValues(new Uint8Array(32))) },
      { flags: { userVerified: false } },
      { type: "webauthn.get" },
    ];
    for (const change of cases) {
      const res = await addPasskey(browser, await SoftwareAuthenticator.create(), "x", change);
      expect(await expectPage(res, 400, "Sign-in methods")).toContain("The passkey was not added.");
    }
    // Another user's registration page: its challenge is for that user alone.
    const other = await signedIn();
    const { options, fields } = passkeyForm(await accountPage(other.browser), "create");
    const credential = await (await SoftwareAuthenticator.create()).register(options, { origin: BASE });
    const res = await browser.post("/oauth/account", {
      ...passkeyForm(await accountPage(browser), "create").fields,
      challenge: fields.challenge!,
      name: "stolen",
      credential,
    });
    await expectPage(res, 400, "Sign-in methods");
    // A registration used twice: the second is refused.
    const authenticator = await SoftwareAuthenticator.create();
    const form = passkeyForm(await accountPage(browser), "create");
    const registration = await authenticator.register(form.options, { origin: BASE });
    expect((await browser.post("/oauth/account", { ...form.fields, name: "a", credential: registration })).status).toBe(
      200,
    );
    const again = await SoftwareAuthenticator.create();
    const replay = await again.register(form.options, { origin: BASE });
    await expectPage(
      await browser.post("/oauth/account", { ...form.fields, name: "b", credential: replay }),
      400,
      "Sign-in methods",
    );
    expect(await db().select().from(passkeys).where(eq(passkeys.userId, userId)).all()).toHaveLength(1);
  });

  it("asks to confirm with the password after 10 minutes, and takes no change until then", async () => {
    const { browser, user, userId } = await signedIn();
    const authenticator = await SoftwareAuthenticator.create();
    await addPasskey(browser, authenticator);
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 11 * 60_000 });
    const stale = await accountPage(browser);
    expect(stale).toContain("To change how you sign in, confirm it is you.");
    expect(stale).not.toContain('value="remove-passkey"');
    const csrf = /name="csrf" value="([^"]+)"/.exec(stale)![1]!;
    const refused = await browser.post("/oauth/account", {
      csrf,
      action: "remove-passkey",
      passkey: authenticator.credentialId,
    });
    await expectPage(refused, 403, "Sign-in methods");
    expect(await db().select().from(passkeys).where(eq(passkeys.userId, userId)).all()).toHaveLength(1);
    await expectPage(
      await browser.post("/oauth/account", { csrf, action: "confirm", password: "wrong" }),
      401,
      "Sign-in methods",
    );
    const confirmed = await browser.post("/oauth/account", { csrf, action: "confirm", password: user.password });
    expect(await expectPage(confirmed, 200, "Sign-in methods")).toContain('value="remove-passkey"');
    // Without the CSRF token nothing is taken.
    await expectPage(
      await browser.post("/oauth/account", { action: "remove-passkey", passkey: authenticator.credentialId }),
      403,
      "Sign-in methods",
    );
  });

  it("confirms with a passkey of the session's user, never another user's", async () => {
    const { browser, uuid } = await signedIn();
    const mine = await SoftwareAuthenticator.create();
    await addPasskey(browser, mine);
    const other = await signedIn();
    const theirs = await SoftwareAuthenticator.create();
    await addPasskey(other.browser, theirs);
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 11 * 60_000 });
    const stale = await accountPage(browser);
    const foreign = passkeyForm(stale, "get");
    const wrong = await theirs.assert(foreign.options, { origin: BASE, userHandle: base64url.encode(other.uuid) });
    await expectPage(
      await browser.post("/oauth/account", { ...foreign.fields, credential: wrong }),
      401,
      "Sign-in methods",
    );
    const form = passkeyForm(await accountPage(browser), "get");
    const right = await mine.assert(form.options, { origin: BASE, userHandle: base64url.encode(uuid) });
    const confirmed = await browser.post("/oauth/account", { ...form.fields, credential: right });
    expect(await expectPage(confirmed, 200, "Sign-in methods")).toContain('value="remove-passkey"');
  });
});

describe("signing in with a passkey", () => {
  it("signs in with a discoverable passkey, no address typed: acr otp, amr swk", async () => {
    const { browser, uuid, userId } = await signedIn();
    const authenticator = await SoftwareAuthenticator.create();
    await addPasskey(browser, authenticator);
    const app = await client();
    const fresh = new Browser();
    const { res, page } = await passkeySignIn(fresh, app.id, authenticator, { userHandle: base64url.encode(uuid) });
    // The login page carries the one script, allowed by its hash, and the address field offers passkeys.
    const script = /<script>([\s\S]*?)<\/script>/.exec(page)![1]!;
    expect(page).toContain('autocomplete="username webauthn"');
    const csp = (await fresh.get(authorizePath(app.id))).headers.get("Content-Security-Policy")!;
    expect(csp).toContain(`script-src ${await sha256Source(script.replace(/&gt;/g, ">"))}`);
    const tokens = await redeem(app, res);
    expect(claimsOf(tokens.id_token)).toMatchObject({ acr: "otp", amr: ["swk", "user", "mfa"] });
    const [row] = await db().select().from(passkeys).where(eq(passkeys.userId, userId)).all();
    expect(row).toMatchObject({ counter: 1 });
    expect(row!.lastUsed).not.toBeNull();
  });

  it("says hwk for a device-bound passkey, and needs no second factor for a user who has one", async () => {
    const { browser } = await signedIn();
    const device = await SoftwareAuthenticator.create({ backupEligible: false, backedUp: false });
    await addPasskey(browser, device);
    const strict = await client({ requireSecondFactor: true });
    const { res } = await passkeySignIn(new Browser(), strict.id, device);
    expect(claimsOf((await redeem(strict, res)).id_token)).toMatchObject({ amr: ["hwk", "user", "mfa"] });
  });

  it("refuses expired and replayed challenges, a wrong relying party or origin, and a missing user verification", async () => {
    const { browser } = await signedIn();
    const authenticator = await SoftwareAuthenticator.create();
    await addPasskey(browser, authenticator);
    const app = await client();
    for (const change of [{ rpId: "evil.test" }, { origin: "https://evil.test" }, { flags: { userVerified: false } }]) {
      const { res } = await passkeySignIn(new Browser(), app.id, authenticator, change);
      expect(await expectPage(res, 401, "Sign in")).toContain("The passkey did not sign you in.");
    }
    // A signature over another challenge than the page's.
    const forged = await passkeySignIn(new Browser(), app.id, authenticator, {
      challenge: base64url.encode(crypto.getRandomValues(new Uint8Array(32))),
    });
    await expectPage(forged.res, 400, "Sign in");
    // The page's challenge, used once, is spent: a second assertion over it is refused.
    const replaying = new Browser();
    const first = await passkeySignIn(replaying, app.id, authenticator);
    expect(first.res.status).toBe(303);
    const replay = await authenticator.assert(first.options, { origin: BASE });
    await expectPage(await replaying.post("/oauth/authorize", { ...first.fields, credential: replay }), 401, "Sign in");
    // Another client's page's challenge: spent nowhere but where it was made, so refused here.
    const other = await client();
    const theirs = passkeyForm(
      await expectPage(await new Browser().get(authorizePath(other.id)), 200, "Sign in"),
      "get",
    );
    const moved = await authenticator.assert(theirs.options, { origin: BASE });
    const crossing = new Browser();
    const mine = passkeyForm(await expectPage(await crossing.get(authorizePath(app.id)), 200, "Sign in"), "get");
    const res = await crossing.post("/oauth/authorize", {
      ...mine.fields,
      challenge: theirs.fields.challenge!,
      credential: moved,
    });
    expect(await expectPage(res, 400, "Sign in")).toContain("The page had expired");
    // After 5 minutes the page's challenge has expired.
    const waiting = new Browser();
    const page = await expectPage(await waiting.get(authorizePath(app.id)), 200, "Sign in");
    const { options, fields } = passkeyForm(page, "get");
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 6 * 60_000 });
    const late = await authenticator.assert(options, { origin: BASE });
    const expired = await waiting.post("/oauth/authorize", { ...fields, credential: late });
    expect(await expectPage(expired, 400, "Sign in")).toContain("The page had expired");
  });

  it("refuses a counter that goes backwards, a removed passkey, and what is no credential", async () => {
    const { browser, userId } = await signedIn();
    const authenticator = await SoftwareAuthenticator.create();
    await addPasskey(browser, authenticator);
    const app = await client({ name: "Counter" });
    expect((await passkeySignIn(new Browser(), app.id, authenticator, { counter: 5 })).res.status).toBe(303);
    const { res } = await passkeySignIn(new Browser(), app.id, authenticator, { counter: 5 });
    await expectPage(res, 401, "Sign in");
    await vi.waitFor(async () => {
      const failures = await db()
        .select()
        .from(auditEvents)
        .where(and(eq(auditEvents.clientId, app.id), eq(auditEvents.action, "signin.failure")))
        .all();
      expect(failures.map((entry) => entry.detail)).toContainEqual({ method: "passkey", reason: "counter" });
    });
    expect((await passkeySignIn(new Browser(), app.id, authenticator, { counter: 6 })).res.status).toBe(303);

    const guesser = new Browser();
    const page = await expectPage(await guesser.get(authorizePath(app.id)), 200, "Sign in");
    const { fields } = passkeyForm(page, "get");
    for (const credential of ["", "{}", "not json", JSON.stringify({ id: "x", type: "public-key", response: {} })]) {
      expect((await guesser.post("/oauth/authorize", { ...fields, credential })).status).toBe(401);
    }
    await db().delete(passkeys).where(eq(passkeys.userId, userId));
    const removed = await passkeySignIn(new Browser(), app.id, authenticator);
    const refusedPage = await expectPage(removed.res, 401, "Sign in");
    expect(refusedPage).toContain("This passkey is not known here any more.");
    // The page after a failed passkey starts no autofill request: it would offer the same passkey at once.
    expect(refusedPage).toContain('data-autofill="off"');
  });

  it("refuses a passkey whose user may not sign in", async () => {
    const { browser, user } = await signedIn();
    const authenticator = await SoftwareAuthenticator.create();
    await addPasskey(browser, authenticator);
    await createUser(Number(user.row.userId), { ...user.row, status: -2 });
    const { res } = await passkeySignIn(new Browser(), (await client()).id, authenticator);
    expect(await expectPage(res, 403, "Sign in")).toContain("This account cannot sign in.");
  });
});

describe("the authenticator app on the account page", () => {
  it("keeps the page's locale across its forms", async () => {
    const { browser } = await signedIn();
    const page = await expectPage(await browser.get("/oauth/account?locale=nb_NO"), 200, "Innloggingsmetoder");
    const setUp = await browser.submit(page, { action: "set-up" });
    const enrol = await expectPage(setUp, 200, "Slå på totrinnsbekreftelse");
    expect(enrol).toContain('name="locale" value="nb_NO"');
  });

  it("sets one up, renews the recovery codes, asks for its code to confirm, and turns it off", async () => {
    const { browser, user, userId } = await signedIn();
    const setUp = await browser.submit(await accountPage(browser), { action: "set-up" });
    const enrol = await expectPage(setUp, 200, "Set up a second factor");
    const secret = /<code class="key">([A-Z2-7 ]+)<\/code>/.exec(enrol)![1]!.replace(/ /g, "");
    const totp = new TOTP({ secret: Secret.fromBase32(secret) });
    const codes = await expectPage(
      await browser.submit(enrol, { action: "enrol", code: totp.generate() }),
      200,
      "Save your recovery codes",
    );
    expect(codes).toContain('href="/oauth/account?locale=en_US"');
    expect(await accountPage(browser)).toContain("10 of 10 recovery codes left");
    const first = await db().select().from(recoveryCodes).where(eq(recoveryCodes.userId, userId)).all();
    await expectPage(
      await browser.submit(await accountPage(browser), { action: "renew-codes" }),
      200,
      "Save your recovery codes",
    );
    const renewed = await db().select().from(recoveryCodes).where(eq(recoveryCodes.userId, userId)).all();
    expect(renewed.map((row) => row.codeHash)).not.toEqual(expect.arrayContaining(first.map((row) => row.codeHash)));

    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 11 * 60_000 });
    const stale = await accountPage(browser);
    expect(stale).toContain('name="code"');
    const withoutCode = await browser.submit(stale, { action: "confirm", password: user.password, code: "000000" });
    await expectPage(withoutCode, 401, "Sign-in methods");
    const confirmed = await browser.submit(stale, {
      action: "confirm",
      password: user.password,
      code: totp.generate(),
    });
    const fresh = await expectPage(confirmed, 200, "Sign-in methods");
    const off = await browser.submit(fresh, { action: "remove-factor" });
    expect(await expectPage(off, 200, "Sign-in methods")).toContain("The authenticator app was turned off.");
    expect(await db().select().from(totpFactors).where(eq(totpFactors.userId, userId)).all()).toEqual([]);
    expect(await db().select().from(recoveryCodes).where(eq(recoveryCodes.userId, userId)).all()).toEqual([]);
  });
});
