/**
 * The audit trail's sign-in and revocation entries (docs/management.md "Audit trail"): each
 * sign-in, each failed password (without the address or the password), each revoked token, with
 * the caller's address. Management writes' entries are in test/user-management.test.ts.
 */
import { beforeAll, describe, expect, it, vi } from "vitest";
import { Browser, expectPage } from "./helpers/browser";
import { basicAuth, bearer, call, container, postForm, serverToken } from "./helpers/http";
import { createClient, createUser } from "./helpers/seed";

const CALLBACK = "https://test.example/callback";
const ADDRESS = { "CF-Connecting-IP": "203.0.113.7" };

let nextUser = 24_000 + Math.floor(Math.random() * 50) * 20;
let admin: string;
beforeAll(async () => {
  admin = await serverToken(await createClient({ admin: true }));
});

async function setting() {
  const client = await createClient({
    grantTypes: ["password", "refresh_token", "authorization_code"],
    redirectUris: [CALLBACK],
    autoApprove: true,
  });
  const userId = nextUser++;
  const user = await createUser(userId, { clients: [client.id] });
  return { client, userId, user };
}

function passwordGrant(client: { id: string; secret: string }, username: string, password: string) {
  return postForm(
    "/oauth/token",
    { grant_type: "password", username, password, redirect_uri: CALLBACK },
    { ...basicAuth(client.id, client.secret), ...ADDRESS },
  );
}

async function entries(query: string) {
  const res = await call(`/api/2/audit?${query}`, { headers: bearer(admin) });
  expect(res.status).toBe(200);
  return (await container(res)).data as Record<string, any>[];
}

/** The entries once `count` have arrived: failures are written off the answer. */
function eventually(query: string, count: number) {
  return vi.waitFor(async () => {
    const found = await entries(query);
    if (found.length < count) throw new Error(`${found.length} of ${count} entries yet`);
    return found;
  });
}

describe("the audit trail of sign-ins", () => {
  it("records a password grant's sign-in, by the user at the client, with the caller's address", async () => {
    const { client, userId, user } = await setting();
    expect((await passwordGrant(client, user.email, user.password)).status).toBe(200);
    const [entry] = await entries(`userId=${userId}`);
    expect(entry).toEqual({
      id: expect.any(String),
      time: expect.any(String),
      merchantId: 10,
      clientId: client.id,
      actor: "user",
      action: "signin.success",
      userId: String(userId),
      targetClientId: null,
      ip: "203.0.113.7",
      detail: { method: "pwd" },
    });
  });

  it("records failed passwords and refused accounts, never the address or the password", async () => {
    const { client, userId, user } = await setting();
    expect((await passwordGrant(client, user.email, "a wrong guess")).status).toBe(400);
    const [wrong] = await eventually(`userId=${userId}&action=signin.failure`, 1);
    expect(wrong).toMatchObject({ actor: "user", clientId: client.id, detail: { method: "pwd", reason: "wrong" } });

    const unknown = `nobody-${crypto.randomUUID()}@example.org`;
    expect((await passwordGrant(client, unknown, "a wrong guess")).status).toBe(400);
    const forUnknown = await eventually(`clientId=${client.id}&action=signin.failure`, 2);
    expect(forUnknown[0]).toMatchObject({ userId: null, detail: { reason: "wrong" } });
    expect(JSON.stringify(forUnknown)).not.toContain(unknown);
    expect(JSON.stringify(forUnknown)).not.toContain("a wrong guess");

    const blocked = nextUser++;
    const blockedUser = await createUser(blocked, { clients: [client.id], status: -2 });
    expect((await passwordGrant(client, blockedUser.email, blockedUser.password)).status).toBe(400);
    const [refused] = await eventually(`userId=${blocked}`, 1);
    expect(refused).toMatchObject({ action: "signin.failure", detail: { reason: "blocked" } });
    expect(await entries(`userId=${userId}&action=signin.success`)).toEqual([]);
  });

  it("names no account of another merchant in a failure, nor its refusal", async () => {
    const { client } = await setting();
    const elsewhere = nextUser++;
    const stranger = await createUser(elsewhere, { clients: ["6b7c8d9e0f1a2b3c4d5e6f70"], status: -2 });
    expect((await passwordGrant(client, stranger.email, stranger.password)).status).toBe(400);
    const [entry] = await eventually(`clientId=${client.id}&action=signin.failure`, 1);
    expect(entry).toMatchObject({ userId: null, detail: { reason: "wrong" } });
  });

  it("records a sign-in on the login page with the session it starts", async () => {
    const { client, userId, user } = await setting();
    const browser = new Browser();
    const query = new URLSearchParams({ client_id: client.id, redirect_uri: CALLBACK, response_type: "code" });
    const page = await expectPage(await browser.get(`/oauth/authorize?${query}`), 200, "Sign in");
    expect((await browser.submit(page, { action: "login", email: user.email, password: user.password })).status).toBe(
      303,
    );
    const [entry] = await entries(`userId=${userId}`);
    expect(entry).toMatchObject({
      action: "signin.success",
      actor: "user",
      clientId: client.id,
      detail: { method: "pwd" },
    });
  });
});

describe("the audit trail of consent", () => {
  it("records the consent a user gives on a client's consent page", async () => {
    const client = await createClient({ grantTypes: ["authorization_code"], redirectUris: [CALLBACK] });
    const userId = nextUser++;
    const user = await createUser(userId, { clients: [] });
    const browser = new Browser();
    const query = new URLSearchParams({ client_id: client.id, redirect_uri: CALLBACK, response_type: "code" });
    const login = await expectPage(await browser.get(`/oauth/authorize?${query}`), 200, "Sign in");
    const consent = await expectPage(
      await browser.submit(login, { action: "login", email: user.email, password: user.password }),
      200,
      "Allow access",
    );
    expect(await entries(`userId=${userId}&action=consent.grant`)).toEqual([]);
    expect((await browser.submit(consent, { action: "approve" })).status).toBe(303);
    const [entry] = await entries(`userId=${userId}&action=consent.grant`);
    expect(entry).toMatchObject({ actor: "user", clientId: client.id, userId: String(userId) });
  });
});

describe("the audit trail of revocations", () => {
  it("records a revoked refresh token's grant and a revoked access token, by the client", async () => {
    const { client, userId, user } = await setting();
    const tokens = (await (await passwordGrant(client, user.email, user.password)).json()) as Record<string, string>;
    const revoke = (token: string) => postForm("/oauth/revoke", { token }, basicAuth(client.id, client.secret));
    expect((await revoke(tokens.access_token!)).status).toBe(200);
    expect((await revoke(tokens.refresh_token!)).status).toBe(200);
    const [grant, access] = await entries(`userId=${userId}&action=token.revoke`);
    expect(access).toMatchObject({
      actor: "client",
      clientId: client.id,
      detail: { token: "access", reason: "revoked" },
    });
    expect(grant).toMatchObject({ actor: "client", detail: { token: "grant", reason: "revoked" } });
    // A token that is not the client's, or not a token: nothing revoked, nothing recorded. Nor is
    // the grant's token revoked again (a retry whose answer was lost): it ended once.
    expect((await revoke("not-a-token")).status).toBe(200);
    expect((await revoke(tokens.refresh_token!)).status).toBe(200);
    expect(await entries(`clientId=${client.id}&action=token.revoke`)).toHaveLength(2);
  });

  it("records the grant a reused refresh token ends", async () => {
    const { client, userId, user } = await setting();
    const tokens = (await (await passwordGrant(client, user.email, user.password)).json()) as Record<string, string>;
    const refresh = () =>
      postForm(
        "/oauth/token",
        { grant_type: "refresh_token", refresh_token: tokens.refresh_token! },
        basicAuth(client.id, client.secret),
      );
    expect((await refresh()).status).toBe(200);
    vi.useFakeTimers({ now: Date.now() + 60_000, toFake: ["Date"] });
    try {
      expect((await refresh()).status).toBe(400);
    } finally {
      vi.useRealTimers();
    }
    const [entry] = await entries(`userId=${userId}&action=token.revoke`);
    expect(entry).toMatchObject({ detail: { token: "grant", reason: "refresh_reuse" } });
  });
});
