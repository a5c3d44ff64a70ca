/**
 * A DATA_PROTECTION_KEY rotation (docs/operations.md "Rotating the data-protection key"), on a
 * database of its own (the `rotation` project): credentials made under the first key, including
 * bare values of before key ids, keep working while the previous key reads; `POST
 * /api/2/keys/reseal` re-seals and reports what still depends on it; after the rotation ends the
 * new key alone serves what moved. The cases run in order: each is a step of one rotation.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { Secret, TOTP } from "otpauth";
import { afterAll, describe, expect, it, vi } from "vitest";
import { verifySignedResponse } from "../../docs/verify-signed-response";
import { generateDataProtectionKey } from "../../scripts/lib/keys";
import { openDatabase } from "../../src/db/client";
import * as schema from "../../src/db/schema";
import type { Bindings } from "../../src/env";
import worker from "../../src/index";
import {
  hashSecret,
  keyFingerprint,
  keyId,
  SWITCH_MARGIN_SECONDS,
  sealSecret,
} from "../../src/security/data-protection";
import { Browser, redirectParameters } from "../helpers/browser";
import { formatDatetime } from "../../src/http/datetime";
import { BASE, basicAuth, bearer, type Container } from "../helpers/http";
import { checkAgainstDocument } from "../helpers/openapi";
import { createClient, createUser } from "../helpers/seed";

const first = env.DATA_PROTECTION_KEY;
const second = generateDataProtectionKey();
type Keys = { DATA_PROTECTION_KEY: string; DATA_PROTECTION_KEY_PREVIOUS?: string };
const before: Keys = { DATA_PROTECTION_KEY: first };
const rotating: Keys = { DATA_PROTECTION_KEY: second, DATA_PROTECTION_KEY_PREVIOUS: first };
const after: Keys = { DATA_PROTECTION_KEY: second };

const CALLBACK = "https://test.example/callback";
const SIGNING_SECRET = "a signing secret for the rotation";
const db = () => openDatabase(env.DB);

/** A request through the Worker under `keys`, its waitUntil work awaited, its answer checked against the document. */
async function callUnder(keys: Keys, path: string, init: RequestInit = {}): Promise<Response> {
  const request = new Request(`${BASE}${path}`, init);
  const ctx = createExecutionContext();
  const response = await worker.fetch(request.clone(), { ...env, ...keys } as Bindings, ctx);
  await waitOnExecutionContext(ctx);
  await checkAgainstDocument(request, response);
  return response;
}

function postUnder(keys: Keys, path: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
  return callUnder(keys, path, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields).toString(),
  });
}

async function tokenUnder(keys: Keys, client: { id: string; secret: string }, fields: Record<string, string>) {
  const res = await postUnder(keys, "/oauth/token", fields, basicAuth(client.id, client.secret));
  return { status: res.status, body: (await res.json()) as Record<string, string> };
}

async function statusUnder(keys: Keys) {
  return ((await (await callUnder(keys, "/api/2/status")).json()) as Container).data as {
    platform: string;
    problems?: string[];
  };
}

async function reseal(keys: Keys, fields: Record<string, string> = {}) {
  const { body } = await tokenUnder(keys, operator, { grant_type: "client_credentials" });
  const res = await postUnder(keys, "/api/2/keys/reseal", fields, bearer(body.access_token!));
  return { status: res.status, body: (await res.json()) as Container };
}

const clientRow = (id: string) => db().select().from(schema.clients).where(eq(schema.clients.id, id)).get();

/**
 * A browser signed in through a webview code (made under `keys`, used under `usedUnder`), whose
 * session cookie is then used for single sign-on.
 */
async function signedInBrowser(keys: Keys, usedUnder = keys) {
  const { body } = await tokenUnder(keys, app, { grant_type: "password", ...credentials() });
  const exchange = await postUnder(
    keys,
    "/api/2/oauth/exchange",
    { clientId: web.id, type: "session", redirectUri: CALLBACK },
    bearer(body.access_token!),
  );
  const exchanged = (await exchange.json()) as Container;
  expect(exchanged.error).toBeNull();
  const code = exchanged.data.code as string;
  const browser = new Browser({}, new Map(), (path, init) => callUnder(usedUnder, path, init));
  expect((await browser.get(`/oauth/webview?code=${encodeURIComponent(code)}`)).status).toBe(303);
  return browser;
}

/** Whether the browser's session signs it in at the web client without a login page. */
async function passesThrough(browser: Browser): Promise<boolean> {
  const res = await browser.get(
    `/oauth/authorize?client_id=${web.id}&response_type=code&redirect_uri=${encodeURIComponent(CALLBACK)}&state=s`,
  );
  return res.status === 303 && redirectParameters(res).params.get("code") !== null;
}

let operator: { id: string; secret: string };
let app: { id: string; secret: string };
let web: { id: string; secret: string };
let legacy: { id: string; secret: string };
let unused: { id: string; secret: string };
let nativeApp: { id: string; secret: string };
let persistentApp: { id: string; secret: string };
const user = { email: "rotation@example.org", password: "a long enough passphrase" };
const factorUser = { email: "rotation-factor@example.org", password: "another long passphrase" };
const TOTP_SECRET = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP";
const state: {
  refreshToken?: string;
  persistentToken?: string;
  movedPersistentToken?: string;
  browser?: Browser;
  bareRefreshToken?: string;
  bareBrowser?: Browser;
} = {};

afterAll(() => vi.useRealTimers());

describe("a DATA_PROTECTION_KEY rotation", () => {
  it("starts from credentials made under the first key, some as bare values of before key ids", async () => {
    operator = await createClient({ universalDataAccess: true });
    app = await createClient({ grantTypes: ["password", "refresh_token", "client_credentials"], autoApprove: true });
    web = await createClient({
      redirectUris: [CALLBACK],
      grantTypes: ["authorization_code", "refresh_token", "client_credentials"],
      autoApprove: true,
      enableSso: true,
      signingSecret: SIGNING_SECRET,
    });
    legacy = await createClient({ signingSecret: SIGNING_SECRET });
    unused = await createClient();
    nativeApp = await createClient({ public: true, grantTypes: ["authorization_code"] });
    persistentApp = await createClient({ grantTypes: ["password", "refresh_token"], refreshTokenRotation: false });
    await createUser(41_001, { ...user, clients: [app.id, web.id, persistentApp.id] });
    // A user whose second factor's secret is sealed under the first key.
    await createUser(41_002, { ...factorUser, clients: [web.id] });
    await db()
      .insert(schema.totpFactors)
      .values({
        userId: 41_002,
        secretSealed: await sealSecret({ current: first }, TOTP_SECRET),
        created: Math.floor(Date.now() / 1000),
        clientId: web.id,
        merchantId: 10,
      });
    // What a database of before key ids holds: a bare hash and a bare sealed secret.
    await db()
      .update(schema.clients)
      .set({ secretHash: await hashSecret(first, legacy.secret) })
      .where(eq(schema.clients.id, legacy.id));
    const tagged = (await clientRow(web.id))!.signingSecretSealed!;
    expect(tagged.startsWith(`${await keyId(first)}.`)).toBe(true);
    await db()
      .update(schema.clients)
      .set({ signingSecretSealed: tagged.slice(tagged.indexOf(".") + 1) })
      .where(eq(schema.clients.id, legacy.id));

    const granted = await tokenUnder(before, app, { grant_type: "password", ...credentials() });
    expect(granted.status).toBe(200);
    state.refreshToken = granted.body.refresh_token;
    state.persistentToken = (
      await tokenUnder(before, persistentApp, { grant_type: "password", ...credentials() })
    ).body.refresh_token;
    state.browser = await signedInBrowser(before);
    expect(await passesThrough(state.browser)).toBe(true);

    // A refresh token and a browser session of before key ids: bare hashes, and a two-part cookie.
    const now = Math.floor(Date.now() / 1000);
    state.bareRefreshToken = `bare-refresh-${crypto.randomUUID()}`;
    await db()
      .insert(schema.refreshTokens)
      .values({
        tokenHash: await hashSecret(first, state.bareRefreshToken),
        clientId: app.id,
        userId: 41_001,
        family: `bare-${crypto.randomUUID()}`,
        created: now,
        expires: now + 30 * 24 * 3600,
      });
    const id = `bare-session-${crypto.randomUUID()}`;
    await db()
      .insert(schema.sessions)
      .values({
        idHash: await hashSecret(first, id),
        userId: 41_001,
        clientId: app.id,
        created: now,
        expires: now + 3600,
      });
    const cookie = `${id}.${await hashSecret(first, `session-cookie:${id}`)}`;
    state.bareBrowser = new Browser({}, new Map([["__Host-session", cookie]]), (path, init) =>
      callUnder(before, path, init),
    );
    expect(await passesThrough(state.bareBrowser)).toBe(true);
  });

  it("switches when the new key comes beside the previous one, recording both", async () => {
    expect(await statusUnder(rotating)).toMatchObject({ platform: "up" });
    expect((await statusUnder(rotating)).problems).toBeUndefined();
    const rows = await db().select().from(schema.keyFingerprints);
    expect(Object.fromEntries(rows.map((row) => [row.name, row.fingerprint]))).toEqual({
      DATA_PROTECTION_KEY: await keyFingerprint(second),
      DATA_PROTECTION_KEY_PREVIOUS: await keyFingerprint(first),
    });
  });

  it("moves nothing to the new key within the switch margin, so an isolate on the first key alone still serves", async () => {
    expect((await statusUnder(before)).problems).toBeUndefined();
    expect((await tokenUnder(rotating, legacy, { grant_type: "client_credentials" })).status).toBe(200);
    expect((await clientRow(legacy.id))!.secretHash).toBe(await hashSecret(first, legacy.secret));
    const round = await reseal(rotating, { end: "now" });
    // Nothing re-sealed yet, so not ended even when asked: a signing secret has no other copy.
    expect(round.body.data).toMatchObject({ rotation: "under-way", resealed: 0, previousKeyNeeded: true });
    const { remaining } = round.body.data as { remaining: { signingSecrets: number; totpSecrets: number } };
    expect(remaining.signingSecrets).toBeGreaterThan(0);
    expect(remaining.totpSecrets).toBe(1);
    expect((await tokenUnder(before, legacy, { grant_type: "client_credentials" })).status).toBe(200);
    const { body } = await tokenUnder(before, web, { grant_type: "client_credentials" });
    const signed = await callUnder(before, "/api/2/clients?signed=1", { headers: bearer(body.access_token!) });
    expect(await verifySignedResponse((await signed.json()) as never, SIGNING_SECRET)).toBeDefined();
  });

  it("tells a deployment with another previous key, and refuses a third key before the rotation ends", async () => {
    expect(
      await statusUnder({ DATA_PROTECTION_KEY: second, DATA_PROTECTION_KEY_PREVIOUS: generateDataProtectionKey() }),
    ).toMatchObject({ platform: "misconfigured", problems: [expect.stringContaining("DATA_PROTECTION_KEY_PREVIOUS")] });
    const third = { DATA_PROTECTION_KEY: generateDataProtectionKey(), DATA_PROTECTION_KEY_PREVIOUS: second };
    expect(await statusUnder(third)).toMatchObject({
      platform: "misconfigured",
      problems: [expect.stringContaining("the rotation before it has not ended")],
    });
    // (A client this isolate has not cached: a cached one is answered without the key.)
    expect((await tokenUnder(third, unused, { grant_type: "client_credentials" })).status).toBe(503);
  });

  it("takes every credential made under the first key, and hashes a presented client secret again", async () => {
    // Past the switch margin from here on.
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 601_000 });
    expect((await tokenUnder(rotating, app, { grant_type: "client_credentials" })).status).toBe(200);
    const legacyToken = await tokenUnder(rotating, legacy, { grant_type: "client_credentials" });
    expect(legacyToken.status).toBe(200);
    const tag = `${await keyId(second)}.`;
    expect((await clientRow(legacy.id))!.secretHash.startsWith(tag)).toBe(true);

    const refreshed = await tokenUnder(rotating, app, {
      grant_type: "refresh_token",
      refresh_token: state.refreshToken!,
    });
    expect(refreshed.status).toBe(200);
    state.refreshToken = refreshed.body.refresh_token;
    expect(await passesThrough(state.browser!.via((path, init) => callUnder(rotating, path, init)))).toBe(true);
    // A code made just before the switch (KV, under the first key) is spent after it.
    expect(await passesThrough(await signedInBrowser(before, rotating))).toBe(true);
    // The values of before key ids.
    const bare = await tokenUnder(rotating, app, {
      grant_type: "refresh_token",
      refresh_token: state.bareRefreshToken!,
    });
    expect(bare.status).toBe(200);
    expect(await passesThrough(state.bareBrowser!.via((path, init) => callUnder(rotating, path, init)))).toBe(true);

    // The signing secret sealed under the first key signs the response.
    const { body } = await tokenUnder(rotating, web, { grant_type: "client_credentials" });
    const signed = await callUnder(rotating, "/api/2/clients?signed=1", { headers: bearer(body.access_token!) });
    expect(await verifySignedResponse((await signed.json()) as never, SIGNING_SECRET)).toBeDefined();
  });

  it("re-seals the signing secrets and reports what still depends on the previous key", async () => {
    const round = await reseal(rotating);
    expect(round.status).toBe(200);
    const data = round.body.data as {
      rotation: string;
      resealed: number;
      previousKeyNeeded: boolean;
      remaining: { signingSecrets: number; totpSecrets: number; clients: string[]; sessions: { count: number } };
    };
    expect(data).toMatchObject({ rotation: "under-way", previousKeyNeeded: true });
    expect(data.resealed).toBeGreaterThanOrEqual(2);
    expect(data.remaining.signingSecrets).toBe(0);
    expect(data.remaining.totpSecrets).toBe(0);
    // The clients whose secret was not presented since the switch; not those that were.
    expect(data.remaining.clients).toContain(unused.id);
    expect(data.remaining.clients).not.toContain(legacy.id);
    // The browser session made under the first key lives on.
    expect(data.remaining.sessions.count).toBeGreaterThanOrEqual(1);
    const tag = `${await keyId(second)}.`;
    expect((await clientRow(web.id))!.signingSecretSealed!.startsWith(tag)).toBe(true);
    const factor = await db().select().from(schema.totpFactors).where(eq(schema.totpFactors.userId, 41_002)).get();
    expect(factor!.secretSealed.startsWith(tag)).toBe(true);
    expect((await clientRow(legacy.id))!.signingSecretSealed!.startsWith(tag)).toBe(true);
    // A public client's secret, which nobody knows, is replaced by another under the new key.
    expect((await clientRow(nativeApp.id))!.secretHash.startsWith(tag)).toBe(true);
    expect(data.remaining.clients).not.toContain(nativeApp.id);
  });

  it("counts a persistent grant started before it for 30 days after its switch margin, its tokens moving as they are refreshed", async () => {
    const data = (await reseal(rotating)).body.data as {
      started: string;
      remaining: { refreshTokens: { count: number; until: string } };
    };
    // A persistent token made under the first key lives 30 days at most from the end of the switch
    // margin, until which isolates on the first key alone may still make one.
    const started = Date.parse(`${data.started.replace(" ", "T")}Z`) / 1000;
    expect(data.remaining.refreshTokens.count).toBeGreaterThanOrEqual(1);
    const persistentUntil = formatDatetime(started + SWITCH_MARGIN_SECONDS + 30 * 24 * 3600);
    expect(data.remaining.refreshTokens.until >= persistentUntil).toBe(true);

    const refreshed = await tokenUnder(rotating, persistentApp, {
      grant_type: "refresh_token",
      refresh_token: state.persistentToken!,
    });
    expect(refreshed.status).toBe(200);
    const next = refreshed.body.refresh_token!;
    expect(next.split(".")[2]).toBe(await keyId(second));
    state.movedPersistentToken = next;
  });

  it("is the operator's alone, and asks for both keys", async () => {
    const { body } = await tokenUnder(rotating, app, { grant_type: "client_credentials" });
    const res = await postUnder(rotating, "/api/2/keys/reseal", {}, bearer(body.access_token!));
    expect(res.status).toBe(401);
    // The new key alone (spelled with its padding: a deployment of its own, judged afresh later).
    expect((await reseal({ DATA_PROTECTION_KEY: `${second}=` })).status).toBe(409);
  });

  it("ends on request, after which the new key alone serves what moved to it", async () => {
    const round = await reseal(rotating, { end: "now" });
    expect(round.body.data).toMatchObject({ rotation: "ended", previousKeyNeeded: false });
    const rows = await db().select().from(schema.keyFingerprints);
    expect(rows.map((row) => row.name)).toEqual(["DATA_PROTECTION_KEY"]);
    expect((await reseal(after)).body.data).toMatchObject({ rotation: "none" });
    // Each write in the operator's trail: the rounds that moved something, and the early end.
    const trail = await db()
      .select({ action: schema.auditEvents.action, detail: schema.auditEvents.detail })
      .from(schema.auditEvents)
      .where(eq(schema.auditEvents.clientId, operator.id))
      .orderBy(schema.auditEvents.id);
    expect(trail.map((entry) => entry.action)).toEqual(["keys.reseal", "keys.rotation.end"]);
    expect(trail[1]!.detail).toEqual({ early: true });
    // The previous key left set reads nothing any more, and is told.
    expect((await tokenUnder(rotating, unused, { grant_type: "client_credentials" })).status).toBe(401);
    expect(await statusUnder({ ...rotating, DATA_PROTECTION_KEY_PREVIOUS: `${first}=` })).toMatchObject({
      platform: "misconfigured",
      problems: [expect.stringContaining("no key rotation is under way")],
    });

    expect((await statusUnder(after)).problems).toBeUndefined();
    expect((await tokenUnder(after, legacy, { grant_type: "client_credentials" })).status).toBe(200);
    const refreshed = await tokenUnder(after, app, { grant_type: "refresh_token", refresh_token: state.refreshToken! });
    expect(refreshed.status).toBe(200);
    // A persistent token made under the first key is unknown now; the one its refresh made is good.
    const persistent = (token: string) =>
      tokenUnder(after, persistentApp, { grant_type: "refresh_token", refresh_token: token });
    expect(await persistent(state.persistentToken!)).toMatchObject({ status: 400, body: { error: "invalid_grant" } });
    expect((await persistent(state.movedPersistentToken!)).status).toBe(200);
    const { body } = await tokenUnder(after, web, { grant_type: "client_credentials" });
    const signed = await callUnder(after, "/api/2/clients?signed=1", { headers: bearer(body.access_token!) });
    expect(await verifySignedResponse((await signed.json()) as never, SIGNING_SECRET)).toBeDefined();
    // What still depended on the first key when the rotation was ended early no longer works.
    expect((await tokenUnder(after, unused, { grant_type: "client_credentials" })).status).toBe(401);
    expect(await passesThrough(state.browser!.via((path, init) => callUnder(after, path, init)))).toBe(false);
    // A second factor re-sealed under the new key still signs in.
    const browser = new Browser({}, new Map(), (path, init) => callUnder(after, path, init));
    const login = await browser.get(
      `/oauth/authorize?client_id=${web.id}&response_type=code&redirect_uri=${encodeURIComponent(CALLBACK)}&state=s`,
    );
    const codePage = await browser.submit(await login.text(), { action: "login", ...factorUser });
    const code = new TOTP({ secret: Secret.fromBase32(TOTP_SECRET) }).generate();
    const signedIn = await browser.submit(await codePage.text(), { action: "otp", code });
    expect(redirectParameters(signedIn).params.get("code")).not.toBeNull();
    // And the first key alone is now another key than the database's.
    expect(await statusUnder({ DATA_PROTECTION_KEY: `${first}=` })).toMatchObject({ platform: "misconfigured" });
  });

  it("on a database without a fingerprint, starts only from a previous key a sealed secret proves", async () => {
    await db().delete(schema.keyFingerprints);
    const third = generateDataProtectionKey();
    const wrong = { DATA_PROTECTION_KEY: third, DATA_PROTECTION_KEY_PREVIOUS: generateDataProtectionKey() };
    expect(await statusUnder(wrong)).toMatchObject({
      platform: "misconfigured",
      problems: ["DATA_PROTECTION_KEY is not the key the database's data was imported under"],
    });
    expect(await db().select().from(schema.keyFingerprints)).toEqual([]);
    const right = { DATA_PROTECTION_KEY: `${third}=`, DATA_PROTECTION_KEY_PREVIOUS: second };
    expect((await statusUnder(right)).problems).toBeUndefined();
    const rows = await db().select().from(schema.keyFingerprints);
    expect(Object.fromEntries(rows.map((row) => [row.name, row.fingerprint]))).toEqual({
      // (`third` itself is refused in this isolate now; its padded spelling is the same key.)
      DATA_PROTECTION_KEY: await keyFingerprint(`${third}=`),
      DATA_PROTECTION_KEY_PREVIOUS: await keyFingerprint(second),
    });
  });
});

function credentials() {
  return { username: user.email, password: user.password, redirect_uri: CALLBACK };
}
