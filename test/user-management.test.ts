/**
 * Managing users while the service runs: status changes, sign-out everywhere and withdrawn
 * connections, who may make each, what each ends (sessions, refresh and access tokens, with
 * back-channel logout notices), and the audit entries each leaves (docs/management.md).
 */
import { decodeJwt, SignJWT } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { redirectParameters } from "./helpers/browser";
import {
  BASE,
  basicAuth,
  bearer,
  call,
  container,
  fjordClient,
  postForm,
  serverToken,
  userTokenResponse,
  webClient,
} from "./helpers/http";
import { CALLBACK, logoutTokensAt, rpClient, signedIn } from "./helpers/relying-party";
import { createClient, createUser, importData } from "./helpers/seed";

const FORM = { "Content-Type": "application/x-www-form-urlencoded" };
const PASSWORD_CLIENT = { grantTypes: ["client_credentials", "password", "refresh_token"] };
const NO_ADMIN_RIGHTS = "Your client doesn't have administration rights for this client";

let nextUser = 20_000 + Math.floor(Math.random() * 50) * 40;

/** Tokens of the clients that manage users: an admin client of merchant 10, and the operator's. */
let admin: string;
let operator: string;
let adminClientId: string;
let operatorClientId: string;

beforeAll(async () => {
  await importData({ merchants: [{ merchantId: 90, name: "Operator" }] });
  const adminClient = await createClient({ admin: true });
  const operatorClient = await createClient({ merchantId: 90, universalDataAccess: true });
  adminClientId = adminClient.id;
  operatorClientId = operatorClient.id;
  admin = await serverToken(adminClient);
  operator = await serverToken(operatorClient);
});

type PasswordClient = { id: string; secret: string; redirectUris: string[] };

/** A fresh client of merchant 10 whose users sign in with a password and refresh their tokens. */
async function passwordClient(): Promise<PasswordClient> {
  return { ...(await createClient(PASSWORD_CLIENT)), redirectUris: ["https://test.example/callback"] };
}

/** A fresh user connected to `clients` (the demo web client by default) and signed in at each. */
async function signedInUser(clients: PasswordClient[] = [webClient]) {
  const userId = nextUser++;
  const user = await createUser(userId, {
    clients: clients.map((client) => client.id),
    emailVerified: "2024-01-02 00:00:00",
  });
  const tokens = await Promise.all(clients.map((client) => userTokenResponse(user, client)));
  return { userId, user, tokens };
}

function setStatus(token: string, userId: number | string, status: string) {
  return call(`/api/2/user/${userId}/status`, {
    method: "POST",
    headers: { ...bearer(token), ...FORM },
    body: `status=${status}`,
  });
}

function signOut(token: string, userId: number, query = "") {
  return call(`/api/2/user/${userId}/logout${query}`, { method: "POST", headers: bearer(token) });
}

function withdraw(token: string, userId: number, query = "") {
  return call(`/api/2/user/${userId}/connection${query}`, { method: "DELETE", headers: bearer(token) });
}

function refresh(client: { id: string; secret: string }, refreshToken: string) {
  return postForm(
    "/oauth/token",
    { grant_type: "refresh_token", refresh_token: refreshToken },
    basicAuth(client.id, client.secret),
  );
}

function passwordSignIn(client: PasswordClient, user: { email: string; password: string }) {
  return postForm(
    "/oauth/token",
    { grant_type: "password", username: user.email, password: user.password, redirect_uri: client.redirectUris[0]! },
    basicAuth(client.id, client.secret),
  );
}

const me = (accessToken: string) => call("/api/2/me", { headers: bearer(accessToken) });

async function auditOf(token: string, query: string) {
  const res = await call(`/api/2/audit?${query}`, { headers: bearer(token) });
  expect(res.status).toBe(200);
  return (await container(res)).data as Record<string, any>[];
}

async function expectError(res: Response, status: number, description: string | RegExp) {
  expect(res.status).toBe(status);
  const text = (await container(res)).error?.error_description;
  if (typeof description === "string") expect(text).toBe(description);
  else expect(text).toMatch(description);
}

describe("POST /api/2/user/{userId}/status", () => {
  it("blocks a user: every token and sign-in refused; unblocking lets them sign in again, the old grants stay ended", async () => {
    const { userId, user, tokens } = await signedInUser();
    const [{ access_token: accessToken, refresh_token: refreshToken }] = tokens as unknown as [Record<string, string>];
    expect((await me(accessToken!)).status).toBe(200);

    const blocked = await setStatus(admin, userId, "blocked");
    expect(blocked.status).toBe(200);
    const body = await container(blocked);
    expect(body.object).toBe("User");
    expect(body.data).toMatchObject({ userId: String(userId), status: -2 });
    expect(blocked.headers.get("x-d1-bookmark")).toEqual(expect.any(String));

    expect((await me(accessToken!)).status).toBe(401);
    expect((await refresh(webClient, refreshToken!)).status).toBe(400);
    expect((await passwordSignIn(webClient, user)).status).not.toBe(200);

    // Verified before: unblocked, the user is verified (1) again.
    const unblocked = await setStatus(admin, userId, "active");
    expect((await container(unblocked)).data.status).toBe(1);
    expect((await passwordSignIn(webClient, user)).status).toBe(200);
    expect((await refresh(webClient, refreshToken!)).status).toBe(400);
    expect((await me(accessToken!)).status).toBe(401);

    const [unblocking, blocking] = await auditOf(admin, `userId=${userId}&action=user.status`);
    expect(unblocking).toMatchObject({
      action: "user.status",
      actor: "admin",
      clientId: adminClientId,
      merchantId: 10,
      userId: String(userId),
      detail: { status: { from: -2, to: 1 } },
    });
    expect(blocking).toMatchObject({ detail: { status: { from: 1, to: -2 }, sessions: 0, grants: 1 } });
  });

  it("deactivating ends the browser session and tells the client that asked for back-channel logout", async () => {
    const client = await rpClient();
    const { browser, user, idToken } = await signedIn(client);
    const res = await setStatus(operator, user.row.userId, "inactive");
    expect((await container(res)).data.status).toBe(-1);

    const [logoutToken] = await logoutTokensAt(client.backchannel);
    const claims = decodeJwt(logoutToken!);
    expect(claims).toMatchObject({ aud: client.id, sub: decodeJwt(idToken).sub, sid: decodeJwt(idToken).sid });
    const query = new URLSearchParams({
      client_id: client.id,
      redirect_uri: CALLBACK,
      response_type: "code",
      scope: "openid",
      prompt: "none",
    });
    expect(redirectParameters(await browser.get(`/oauth/authorize?${query}`)).params.get("error")).toBe(
      "login_required",
    );
  });

  it("leaves an account that never proved an address to the operator: an admin client may erase it, not block it", async () => {
    const userId = nextUser++;
    await createUser(userId);
    await expectError(await setStatus(admin, userId, "blocked"), 403, /never proved an address/);
    expect((await container(await setStatus(operator, userId, "blocked"))).data.status).toBe(-2);
    expect((await call(`/api/2/user/${userId}`, { method: "DELETE", headers: bearer(admin) })).status).toBe(200);
  });

  it("unblocks a user who has never been verified as unverified", async () => {
    const userId = nextUser++;
    await createUser(userId, { status: -2 });
    expect((await container(await setStatus(operator, userId, "active"))).data.status).toBe(0);
  });

  it("unblocks a user who has been verified as verified", async () => {
    const userId = nextUser++;
    await createUser(userId, { status: -2, verified: "2024-02-01 10:00:00" });
    expect((await container(await setStatus(operator, userId, "active"))).data).toMatchObject({
      status: 1,
      verified: "2024-02-01 10:00:00",
    });
  });

  it("changes nothing and records nothing when the user already has the status", async () => {
    const { userId } = await signedInUser();
    expect((await setStatus(admin, userId, "blocked")).status).toBe(200);
    expect((await setStatus(admin, userId, "blocked")).status).toBe(200);
    expect(await auditOf(admin, `userId=${userId}&action=user.status`)).toHaveLength(1);
  });

  it("is the operator's or an admin client's of the one merchant the user is connected to", async () => {
    const { userId, tokens } = await signedInUser();
    await expectError(await setStatus(await serverToken(webClient), userId, "blocked"), 401, NO_ADMIN_RIGHTS);
    const otherMerchantAdmin = await serverToken(await createClient({ merchantId: 20, admin: true }));
    await expectError(await setStatus(otherMerchantAdmin, userId, "blocked"), 404, "User not found");
    const [{ access_token: accessToken }] = tokens as unknown as [Record<string, string>];
    expect((await setStatus(accessToken!, userId, "blocked")).status).toBe(403);
    expect((await me(accessToken!)).status).toBe(200);

    const shared = nextUser++;
    await createUser(shared, { clients: [webClient.id, fjordClient.id] });
    const refused = await setStatus(admin, shared, "blocked");
    expect(refused.status).toBe(403);
    expect((await container(refused)).error?.error_description).toMatch(
      /^Client or merchant is not authorized to access this user/,
    );
    expect((await container(await setStatus(operator, shared, "blocked"))).data.status).toBe(-2);
    expect((await auditOf(admin, `userId=${userId}`)).filter(({ action }) => action.startsWith("user."))).toEqual([]);
  });

  it("refuses a deleted user, an unknown user, and a status it does not know", async () => {
    const deleted = nextUser++;
    await createUser(deleted, { status: -3 });
    await expectError(
      await setStatus(operator, deleted, "active"),
      409,
      "The user is deleted: a deleted account's status does not change",
    );
    await expectError(await setStatus(operator, 999_999, "blocked"), 404, "User not found");
    const { userId } = await signedInUser();
    for (const status of ["", "deleted", "-2", "blocked&status=active"]) {
      expect((await setStatus(admin, userId, status)).status, status).toBe(400);
    }
    const noBody = await call(`/api/2/user/${userId}/status`, { method: "POST", headers: bearer(admin) });
    expect(noBody.status).toBe(400);
  });
});

describe("POST /api/2/user/{userId}/logout", () => {
  it("a client signs the user out at itself only; an admin client at every client of its merchant", async () => {
    const [a, b] = [await passwordClient(), await passwordClient()];
    const { userId, tokens } = await signedInUser([a, b]);
    const [atA, atB] = tokens as unknown as [Record<string, string>, Record<string, string>];

    const own = await signOut(await serverToken(a), userId);
    expect((await container(own)).data).toEqual({ userId: String(userId), sessions: 0, grants: 1 });
    expect((await me(atA.access_token!)).status).toBe(401);
    expect((await refresh(a, atA.refresh_token!)).status).toBe(400);
    expect((await me(atB.access_token!)).status).toBe(200);
    const renewed = (await (await refresh(b, atB.refresh_token!)).json()) as Record<string, string>;

    const everywhere = await signOut(admin, userId);
    expect((await container(everywhere)).data).toMatchObject({ grants: 1 });
    expect((await refresh(b, renewed.refresh_token!)).status).toBe(400);
    expect((await me(renewed.access_token!)).status).toBe(401);

    const entries = await auditOf(admin, `userId=${userId}&action=user.logout`);
    expect(entries.map((entry) => [entry.actor, entry.detail.scope])).toEqual([
      ["admin", { merchantId: 10 }],
      ["client", { clientId: a.id }],
    ]);
  });

  it("signs out at one named client, for an admin client of its merchant or the operator", async () => {
    const [a, b] = [await passwordClient(), await passwordClient()];
    const { userId, tokens } = await signedInUser([a, b]);
    const [atA, atB] = tokens as unknown as [Record<string, string>, Record<string, string>];
    expect((await signOut(admin, userId, `?clientId=${b.id}`)).status).toBe(200);
    expect((await me(atB.access_token!)).status).toBe(401);
    expect((await me(atA.access_token!)).status).toBe(200);
    expect((await signOut(operator, userId, `?clientId=${a.id}`)).status).toBe(200);
    expect((await me(atA.access_token!)).status).toBe(401);
  });

  it("refuses another client to a plain client, another merchant's client, and an unknown one", async () => {
    const [a, b] = [await passwordClient(), await passwordClient()];
    const { userId } = await signedInUser([a, b]);
    await expectError(
      await signOut(await serverToken(a), userId, `?clientId=${b.id}`),
      401,
      "You don't have administration rights for this client",
    );
    await expectError(await signOut(admin, userId, `?clientId=${fjordClient.id}`), 404, "Client ID mismatch");
    await expectError(await signOut(admin, userId, "?clientId=no-such-client"), 404, "Unknown client ID");
    expect((await signOut(admin, userId, `?clientId=${a.id}&clientId=${b.id}`)).status).toBe(400);
    const otherMerchant = await serverToken(await createClient({ merchantId: 20 }));
    await expectError(await signOut(otherMerchant, userId), 404, "User not found");
    expect((await auditOf(admin, `userId=${userId}`)).filter(({ action }) => action.startsWith("user."))).toEqual([]);
  });

  it("ends the browser sessions and tells each back-channel client of its session", async () => {
    const client = await rpClient();
    const { browser, user, idToken } = await signedIn(client);
    const res = await signOut(operator, Number(user.row.userId));
    expect((await container(res)).data).toMatchObject({ sessions: 1, grants: 1 });
    const [logoutToken] = await logoutTokensAt(client.backchannel);
    expect(decodeJwt(logoutToken!)).toMatchObject({ sid: decodeJwt(idToken).sid });
    const query = new URLSearchParams({
      client_id: client.id,
      redirect_uri: CALLBACK,
      response_type: "code",
      prompt: "none",
    });
    expect(redirectParameters(await browser.get(`/oauth/authorize?${query}`)).params.get("error")).toBe(
      "login_required",
    );
  });

  it("tells a back-channel client whose grant came from no browser session, by the user's subject alone", async () => {
    const client = await rpClient({ grantTypes: ["password", "refresh_token"] });
    const userId = nextUser++;
    const user = await createUser(userId, { clients: [client.id] });
    const { id_token: idToken } = await userTokenResponse(user, { ...client, redirectUris: [CALLBACK] }, "openid");
    expect((await signOut(operator, userId)).status).toBe(200);
    const [logoutToken] = await logoutTokensAt(client.backchannel);
    const claims = decodeJwt(logoutToken!);
    expect(claims.sub).toBe(decodeJwt(idToken as string).sub);
    expect(claims).not.toHaveProperty("sid");
  });
});

describe("an export with the user's own token", () => {
  it("holds what the token's client holds, not its merchant's other clients", async () => {
    const [a, b] = [await passwordClient(), await passwordClient()];
    const { userId, tokens } = await signedInUser([a, b]);
    const [atA] = tokens as unknown as [Record<string, string>];
    const own = (await container(await exportOf(atA.access_token!, userId))).data;
    expect(own.connections.map((c: { clientId: string }) => c.clientId)).toEqual([a.id]);
    expect(own.grants.map((g: { clientId: string }) => g.clientId)).toEqual([a.id]);
    const merchant = (await container(await exportOf(admin, userId))).data;
    expect(merchant.connections.map((c: { clientId: string }) => c.clientId).sort()).toEqual([a.id, b.id].sort());
    const [entry] = await auditOf(admin, `userId=${userId}&action=user.export`);
    expect(entry).toMatchObject({ actor: "admin", detail: { scope: { merchantId: 10 } } });
  });
});

describe("sign-out and a token from a JWT assertion", () => {
  it("ends a user token that a JWT assertion gave, which has no refresh token", async () => {
    const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";
    const signingSecret = "the client's signing secret";
    const client = await createClient({ grantTypes: ["client_credentials", JWT_BEARER], signingSecret });
    const userId = nextUser++;
    await createUser(userId, { clients: [client.id] });
    const now = Math.floor(Date.now() / 1000);
    const assertion = await new SignJWT({
      iss: client.id,
      sub: String(userId),
      aud: `${BASE}/oauth/token`,
      exp: now + 60,
      jti: crypto.randomUUID(),
    })
      .setProtectedHeader({ alg: "HS256" })
      .sign(new TextEncoder().encode(signingSecret));
    const res = await postForm(
      "/oauth/token",
      { grant_type: JWT_BEARER, assertion },
      basicAuth(client.id, client.secret),
    );
    const { access_token: token } = (await res.json()) as { access_token: string };
    // An endpoint that reads the user through the token, without a status check of its own.
    const products = () => call(`/api/2/user/${userId}/products`, { headers: bearer(token) });
    expect((await products()).status).toBe(200);
    expect((await container(await signOut(admin, userId))).data).toMatchObject({ grants: 0 });
    expect((await products()).status).toBe(401);
  });
});

describe("DELETE /api/2/user/{userId}/connection", () => {
  it("withdraws the user's consent with the user's own token: the client's grants end, its next sign-in needs consent", async () => {
    const [a, b] = [await passwordClient(), await passwordClient()];
    const { userId, user, tokens } = await signedInUser([a, b]);
    const [atA, atB] = tokens as unknown as [Record<string, string>, Record<string, string>];

    const res = await withdraw(atA.access_token!, userId);
    expect((await container(res)).data).toEqual({ userId: String(userId), sessions: 0, grants: 1 });
    expect((await refresh(a, atA.refresh_token!)).status).toBe(400);
    expect((await me(atA.access_token!)).status).toBe(401);
    expect((await passwordSignIn(a, user)).status).toBe(400);
    expect((await me(atB.access_token!)).status).toBe(200);

    const [entry] = await auditOf(admin, `userId=${userId}&action=user.connection.withdraw`);
    expect(entry).toMatchObject({ action: "user.connection.withdraw", actor: "user", clientId: a.id });
    // Withdrawn already: nothing left to withdraw.
    await expectError(await withdraw(await serverToken(a), userId), 404, "The user is not connected to the client");
  });

  it("an admin client withdraws the user from a named client of its merchant; a user token only from its own client", async () => {
    const [a, b] = [await passwordClient(), await passwordClient()];
    const { userId, tokens } = await signedInUser([a, b]);
    const [atA] = tokens as unknown as [Record<string, string>];
    await expectError(
      await withdraw(atA.access_token!, userId, `?clientId=${b.id}`),
      401,
      "You don't have administration rights for this client",
    );
    expect((await withdraw(admin, userId, `?clientId=${b.id}`)).status).toBe(200);
    await expectError(
      await withdraw(admin, userId, `?clientId=${b.id}`),
      404,
      "The user is not connected to the client",
    );
    expect((await me(atA.access_token!)).status).toBe(200);
  });
});

/** A user with everything a profile holds, connected to the demo web client, with a mail and a device. */
async function fullUser() {
  const userId = nextUser++;
  const email = `full${userId}@example.org`;
  const user = await createUser(userId, {
    email,
    emailVerified: "2024-01-02 00:00:00",
    emails: [{ value: `work${userId}@example.org`, type: "work", primary: false, verified: true }],
    phoneNumber: "+4791234567",
    name: { givenName: "Astrid", familyName: "Lund", formatted: "Astrid Lund" },
    displayName: "Astrid L.",
    preferredUsername: `astrid${userId}`,
    birthday: "1990-01-01",
    gender: "female",
    addresses: { home: { streetAddress: "Storgata 2", postalCode: "0155", locality: "Oslo", country: "NO" } },
  });
  await importData({
    mails: [
      {
        userId: String(userId),
        template: "welcome",
        senderEmail: "no-reply@nordicdaily.example",
        userEmail: email,
        created: 1709284500,
        token: `mail-${userId}`,
        events: [{ event: "sent", timestamp: 1709284501 }],
      },
    ],
  });
  const tokens = await userTokenResponse({ email, password: user.password }, webClient);
  const device = await postForm(
    "/api/2/devices",
    { deviceId: `device-${userId}`, platform: "iPhone", applicationName: "Reader" },
    bearer(tokens.access_token),
  );
  expect(device.status).toBe(201);
  return { userId, email, password: user.password, tokens };
}

function erase(token: string, userId: number) {
  return call(`/api/2/user/${userId}`, { method: "DELETE", headers: bearer(token) });
}

function exportOf(token: string, userId: number) {
  return call(`/api/2/user/${userId}/export`, { headers: bearer(token) });
}

describe("DELETE /api/2/user/{userId}", () => {
  it("erases the user's personal data and keeps a deleted account under the same ids", async () => {
    const { userId, email, password, tokens } = await fullUser();
    const res = await erase(operator, userId);
    expect(res.status).toBe(200);
    const erased = (await container(res)).data;
    expect(erased).toMatchObject({
      userId: String(userId),
      status: -3,
      published: false,
      email: null,
      emails: [],
      phoneNumber: null,
      phoneNumbers: [],
      addresses: [],
      displayName: null,
      preferredUsername: null,
      name: { givenName: null, familyName: null, formatted: null },
      birthday: "0000-00-00",
      gender: "undisclosed",
    });
    expect((await me(tokens.access_token)).status).toBe(401);
    expect((await refresh(webClient, tokens.refresh_token as string)).status).toBe(400);
    expect((await passwordSignIn(webClient, { email, password })).status).not.toBe(200);

    // The client still sees the account, as deleted, and nothing of the person.
    const shown = await call(`/api/2/user/${userId}`, { headers: bearer(await serverToken(webClient)) });
    expect((await container(shown)).data).toMatchObject({ status: -3, email: null });
    const mail = await call(`/api/2/mail?id=${userId}`, { headers: bearer(await serverToken(webClient)) });
    expect((await container(mail)).data).toEqual([]);
    const held = (await container(await exportOf(operator, userId))).data;
    expect(held).toMatchObject({ devices: [], mails: [], sessions: [], grants: [] });
    expect(JSON.stringify(held)).not.toContain(email);
    expect(JSON.stringify(held)).not.toContain("Astrid");

    const [entry] = await auditOf(operator, `userId=${userId}&action=user.erase`);
    expect(entry).toMatchObject({ actor: "operator", detail: { sessions: 0, grants: 1 } });
    // Again: the same answer, and nothing more recorded.
    expect((await container(await erase(operator, userId))).data).toEqual(erased);
    expect(await auditOf(operator, `userId=${userId}&action=user.erase`)).toHaveLength(1);
  });

  it("tells the clients that asked for back-channel logout", async () => {
    const client = await rpClient();
    const { user, idToken } = await signedIn(client);
    expect((await erase(operator, Number(user.row.userId))).status).toBe(200);
    const [logoutToken] = await logoutTokensAt(client.backchannel);
    expect(decodeJwt(logoutToken!)).toMatchObject({ sub: decodeJwt(idToken).sub, sid: decodeJwt(idToken).sid });
  });

  it("is the operator's, or an admin client's of the one merchant the user is connected to", async () => {
    const { userId } = await signedInUser();
    await expectError(await erase(await serverToken(webClient), userId), 401, NO_ADMIN_RIGHTS);
    const shared = nextUser++;
    await createUser(shared, { clients: [webClient.id, fjordClient.id] });
    expect((await erase(admin, shared)).status).toBe(403);
    expect((await erase(admin, userId)).status).toBe(200);
  });
});

describe("GET /api/2/user/{userId}/export", () => {
  it("gives the operator everything held about the user, never a token or a hash", async () => {
    const res = await exportOf(operator, 1001);
    expect(res.status).toBe(200);
    const held = (await container(res)).data;
    expect(held.user).toMatchObject({ userId: "1001", email: "ingrid.hansen@example.org" });
    // Other test files may connect user 1001 to clients of their own (one shared database).
    expect(held.connections.map((c: { clientId: string }) => c.clientId)).toEqual(
      expect.arrayContaining(["4f1c2a9d8e7b6c5a4f3e2d1c", "5a2b3c4d5e6f7a8b9c0d1e2f"]),
    );
    expect(held.digitalContents).toEqual(expect.arrayContaining([expect.objectContaining({ userId: "1001" })]));
    expect(held.mails).toEqual(expect.arrayContaining([expect.objectContaining({ template: "welcome" })]));
    expect(JSON.stringify(held)).not.toMatch(/hash|password|secret/i);
  });

  it("gives an admin client and the user's own token what the merchant holds, mail sent for its clients included", async () => {
    const userId = nextUser++;
    const user = await createUser(userId, { clients: [webClient.id] });
    const fjord = {
      ...(await createClient({ merchantId: 20, autoApprove: true, ...PASSWORD_CLIENT })),
      redirectUris: ["https://test.example/callback"],
    };
    await userTokenResponse(user, fjord);
    const own = await userTokenResponse(user, webClient);
    const mailFor = (clientId: string) => ({
      userId: String(userId),
      clientId,
      template: "receipt",
      senderEmail: "shop@example.org",
      userEmail: user.email,
      created: 1709284500,
      token: `mail-${clientId}-${userId}`,
    });
    await importData({ mails: [mailFor(webClient.id), mailFor(fjord.id)] });

    for (const token of [admin, own.access_token]) {
      const held = (await container(await exportOf(token, userId))).data;
      expect(held.connections).toEqual([expect.objectContaining({ clientId: webClient.id, merchantId: 10 })]);
      expect(held.grants.map((g: { clientId: string }) => g.clientId)).toEqual([webClient.id]);
      expect(held.mails.map((m: { token: string }) => m.token)).toEqual([`mail-${webClient.id}-${userId}`]);
    }
    const everything = (await container(await exportOf(operator, userId))).data;
    expect(everything.connections).toHaveLength(2);
    expect(everything.mails).toHaveLength(2);

    expect((await exportOf(own.access_token, 1001)).status).toBe(403);
    await expectError(await exportOf(await serverToken(webClient), userId), 401, NO_ADMIN_RIGHTS);
  });
});

describe("GET /api/2/audit", () => {
  it("shows an admin client its merchant's trail only; the operator every merchant's, one at a time when asked", async () => {
    const fjordAdmin = await serverToken(await createClient({ merchantId: 20, admin: true }));
    const fjordUser = nextUser++;
    await createUser(fjordUser, { clients: [fjordClient.id] });
    expect((await signOut(fjordAdmin, fjordUser)).status).toBe(200);

    expect(await auditOf(admin, `userId=${fjordUser}`)).toEqual([]);
    const [entry] = await auditOf(fjordAdmin, `userId=${fjordUser}`);
    expect(entry).toMatchObject({ merchantId: 20, action: "user.logout", ip: null });
    expect(await auditOf(operator, `userId=${fjordUser}&merchantId=20`)).toHaveLength(1);
    expect(await auditOf(operator, `userId=${fjordUser}&merchantId=10`)).toEqual([]);
    await expectError(
      await call(`/api/2/audit?merchantId=20`, { headers: bearer(admin) }),
      403,
      "Only the operator's client reads another merchant's trail",
    );
  });

  it("pages newest first, narrows by client, action and time, and selects fields", async () => {
    // A user without a sign-in: the only entries are the two sign-outs.
    const userId = nextUser++;
    await createUser(userId);
    await signOut(admin, userId);
    await signOut(operator, userId);
    const all = await auditOf(operator, `userId=${userId}`);
    expect(all.map((entry) => entry.clientId)).toEqual([operatorClientId, adminClientId]);
    expect(await auditOf(operator, `userId=${userId}&limit=1&offset=1`)).toEqual([all[1]]);
    expect(await auditOf(operator, `userId=${userId}&clientId=${adminClientId}`)).toEqual([all[1]]);
    expect(await auditOf(operator, `userId=${userId}&action=user.status`)).toEqual([]);
    expect(await auditOf(operator, `userId=${userId}&until=2020-01-01`)).toEqual([]);
    expect(await auditOf(operator, `userId=${userId}&fields=action,actor`)).toEqual([
      { action: "user.logout", actor: "operator" },
      { action: "user.logout", actor: "admin" },
    ]);
  });

  it("is refused to a plain client, and to unknown or repeated parameters", async () => {
    await expectError(
      await call("/api/2/audit", { headers: bearer(await serverToken(webClient)) }),
      401,
      NO_ADMIN_RIGHTS,
    );
    for (const query of ["userId=1&userId=2", "userId=abc", "colour=red", "merchantId=x"]) {
      expect((await call(`/api/2/audit?${query}`, { headers: bearer(operator) })).status, query).toBe(400);
    }
  });
});
