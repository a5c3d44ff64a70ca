/**
 * Managing clients through the API (docs/management.md "Managing clients"): a secret rotated with
 * an overlap that ends when the caller said (a controlled clock), a client disabled and enabled
 * again, who may do each, and the audit entries.
 */
import { SignJWT } from "jose";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { verifySignedResponse } from "../docs/verify-signed-response";
import { expectPage } from "./helpers/browser";
import { BASE, basicAuth, bearer, call, container, postForm, serverToken } from "./helpers/http";
import { createClient, createUser, importData } from "./helpers/seed";

const FORM = { "Content-Type": "application/x-www-form-urlencoded" };
let admin: string;
let adminId: string;
let operator: string;
beforeAll(async () => {
  await importData({ merchants: [{ merchantId: 91, name: "Operator" }] });
  const adminClient = await createClient({ admin: true });
  adminId = adminClient.id;
  admin = await serverToken(adminClient);
  operator = await serverToken(await createClient({ merchantId: 91, universalDataAccess: true }));
});
afterEach(() => vi.useRealTimers());

function rotate(token: string, clientId: string, fields: Record<string, string> = {}) {
  return call(`/api/2/client/${clientId}/secret`, {
    method: "POST",
    headers: { ...bearer(token), ...FORM },
    body: new URLSearchParams(fields).toString(),
  });
}

function setStatus(token: string, clientId: string, status: string) {
  return call(`/api/2/client/${clientId}/status`, {
    method: "POST",
    headers: { ...bearer(token), ...FORM },
    body: `status=${status}`,
  });
}

/** The token endpoint's answer to the client's credentials. */
async function tokenStatus(id: string, secret: string): Promise<number> {
  const res = await postForm("/oauth/token", { grant_type: "client_credentials" }, basicAuth(id, secret));
  await res.body?.cancel();
  return res.status;
}

async function expectError(res: Response, status: number, description: string | RegExp) {
  expect(res.status).toBe(status);
  expect((await container(res)).error?.error_description).toMatch(description);
}

async function auditOf(query: string) {
  return (await container(await call(`/api/2/audit?${query}`, { headers: bearer(admin) }))).data as Record<
    string,
    any
  >[];
}

describe("POST /api/2/client/{clientId}/secret", () => {
  it("answers a new secret; the old one works until the overlap ends, then only the new one", async () => {
    const client = await createClient();
    expect(await tokenStatus(client.id, client.secret)).toBe(200);
    const now = Math.floor(Date.now() / 1000);
    const res = await rotate(admin, client.id, { previousSecretValidUntil: String(now + 3600) });
    expect(res.status).toBe(200);
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    const { data } = await container(res);
    expect(data).toEqual({
      clientId: client.id,
      clientSecret: expect.any(String),
      previousSecretValidUntil: expect.any(String),
    });
    expect(data.clientSecret.length).toBeGreaterThanOrEqual(43);

    expect(await tokenStatus(client.id, data.clientSecret)).toBe(200);
    expect(await tokenStatus(client.id, client.secret)).toBe(200);
    vi.useFakeTimers({ now: (now + 3601) * 1000, toFake: ["Date"] });
    expect(await tokenStatus(client.id, client.secret)).toBe(401);
    expect(await tokenStatus(client.id, data.clientSecret)).toBe(200);

    vi.useRealTimers();
    const [entry] = await auditOf(`action=client.secret.rotate&clientId=${adminId}`);
    expect(entry).toMatchObject({
      actor: "admin",
      targetClientId: client.id,
      detail: { previousSecretValidUntil: now + 3600 },
    });
    expect(JSON.stringify(entry)).not.toContain(data.clientSecret);
  });

  it("ends the old secret at once when told now, and a second rotation ends the first one's overlap", async () => {
    const client = await createClient();
    const now = Math.floor(Date.now() / 1000);
    const first = (await container(await rotate(admin, client.id))).data.clientSecret as string;
    expect(await tokenStatus(client.id, client.secret)).toBe(200);
    const second = (await container(await rotate(operator, client.id, { previousSecretValidUntil: String(now) }))).data
      .clientSecret as string;
    expect(await tokenStatus(client.id, client.secret)).toBe(401);
    expect(await tokenStatus(client.id, first)).toBe(401);
    expect(await tokenStatus(client.id, second)).toBe(200);
  });

  it("is an admin client's for its merchant's clients and the operator's for any", async () => {
    const client = await createClient();
    await expectError(
      await rotate(await serverToken(client), client.id),
      401,
      "Your client doesn't have administration rights for this client",
    );
    const fjordAdmin = await serverToken(await createClient({ merchantId: 20, admin: true }));
    await expectError(await rotate(fjordAdmin, client.id), 404, "Client ID mismatch");
    await expectError(await rotate(admin, "no-such-client"), 404, "Unknown client ID");
    const now = Math.floor(Date.now() / 1000);
    for (const until of [String(now - 3600), String(now + 31 * 24 * 3600), "tomorrow", "2020-01-01 00:00:00"]) {
      await expectError(
        await rotate(admin, client.id, { previousSecretValidUntil: until }),
        400,
        /previousSecretValidUntil/,
      );
    }
    const publicClient = await createClient({ public: true, secret: undefined, tokenEndpointAuthMethod: "none" });
    await expectError(await rotate(admin, publicClient.id), 400, "A public client has no secret to rotate");
    expect(await tokenStatus(client.id, client.secret)).toBe(200);
  });
});

describe("rotations: who may rotate whose, and a retried rotation", () => {
  it("lets an admin client rotate its own secret, never another admin's or the operator's", async () => {
    const otherAdmin = await createClient({ admin: true });
    const operatorClient = await createClient({ merchantId: 10, universalDataAccess: true });
    for (const target of [otherAdmin, operatorClient]) {
      await expectError(await rotate(admin, target.id), 401, /another admin or the operator's client/);
      await expectError(await setStatus(admin, target.id, "disabled"), 401, /another admin or the operator's client/);
      expect(await tokenStatus(target.id, target.secret)).toBe(200);
    }
    expect((await rotate(operator, otherAdmin.id)).status).toBe(200);
    const self = await createClient({ admin: true });
    expect((await rotate(await serverToken(self), self.id)).status).toBe(200);
  });

  it("answers a retry with the same Idempotency-Key by the same secret, and the secret before it still works", async () => {
    const client = await createClient();
    const key = crypto.randomUUID();
    const send = (fields: Record<string, string> = {}) =>
      call(`/api/2/client/${client.id}/secret`, {
        method: "POST",
        headers: { ...bearer(admin), ...FORM, "Idempotency-Key": key },
        body: new URLSearchParams(fields).toString(),
      });
    const [first, retried] = [await send(), await send()];
    const secret = (await container(first)).data.clientSecret as string;
    expect((await container(retried)).data.clientSecret).toBe(secret);
    expect(await tokenStatus(client.id, client.secret)).toBe(200);
    expect(await tokenStatus(client.id, secret)).toBe(200);
    await expectError(await send({ previousSecretValidUntil: "2099-01-01 00:00:00" }), 422, /Idempotency-Key/);
    const rotations = await auditOf(`action=client.secret.rotate&clientId=${adminId}`);
    expect(rotations.filter((entry) => entry.targetClientId === client.id)).toHaveLength(1);
    // Rotated again since: the key's secret is no longer the client's, so it is not handed out.
    await rotate(admin, client.id);
    await expectError(await send(), 409, /rotated since/);
  });
});

describe("POST /api/2/client/{clientId}/signing-secret", () => {
  const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";
  const OLD = "the signing secret before the rotation";

  /** A signed response of the client verifies with `secret`. */
  async function signsWith(client: { id: string; secret: string }, secret: string): Promise<boolean> {
    const body = await container(await call("/api/2/clients?signed=1", { headers: bearer(await serverToken(client)) }));
    return verifySignedResponse(body as never, secret).then(
      () => true,
      () => false,
    );
  }

  /** The token endpoint's answer to a JWT assertion for `userId` signed with `secret`. */
  async function assertionStatus(client: { id: string; secret: string }, userId: string, secret: string) {
    const now = Math.floor(Date.now() / 1000);
    const jwt = await new SignJWT({
      iss: client.id,
      sub: userId,
      aud: `${BASE}/oauth/token`,
      exp: now + 60,
      jti: crypto.randomUUID(),
    })
      .setProtectedHeader({ alg: "HS256" })
      .sign(new TextEncoder().encode(secret));
    const res = await postForm(
      "/oauth/token",
      { grant_type: JWT_BEARER, assertion: jwt },
      basicAuth(client.id, client.secret),
    );
    await res.body?.cancel();
    return res.status;
  }

  it("answers a new signing secret; the old one signs and is taken until the overlap ends, then the new one alone", async () => {
    const client = await createClient({ signingSecret: OLD, grantTypes: ["client_credentials", JWT_BEARER] });
    const userId = String(26_000 + Math.floor(Math.random() * 1000));
    await createUser(Number(userId), { clients: [client.id] });
    const now = Math.floor(Date.now() / 1000);
    // A client with the JWT bearer grant, which the admin client lacks: the operator's to manage.
    const rotate = (token: string) =>
      call(`/api/2/client/${client.id}/signing-secret`, {
        method: "POST",
        headers: { ...bearer(token), ...FORM },
        body: `previousSecretValidUntil=${now + 600}`,
      });
    await expectError(
      await rotate(admin),
      401,
      /holding more than yours \(grant type urn:ietf:params:oauth:grant-type:jwt-bearer\)/,
    );
    const res = await rotate(operator);
    expect(res.status).toBe(200);
    const { signingSecret } = (await container(res)).data as { signingSecret: string };

    expect(await signsWith(client, OLD)).toBe(true);
    expect(await assertionStatus(client, userId, OLD)).toBe(200);
    expect(await assertionStatus(client, userId, signingSecret)).toBe(200);
    expect(await assertionStatus(client, userId, "a secret it never had")).toBe(400);

    vi.useFakeTimers({ now: (now + 601) * 1000, toFake: ["Date"] });
    expect(await signsWith(client, signingSecret)).toBe(true);
    expect(await assertionStatus(client, userId, signingSecret)).toBe(200);
    expect(await assertionStatus(client, userId, OLD)).toBe(400);
    vi.useRealTimers();

    // The operator's entry, in the operator's trail.
    const trail = await container(
      await call("/api/2/audit?action=client.signing-secret.rotate", { headers: bearer(operator) }),
    );
    const entry = Object.values(trail.data as object).find(
      (e: { targetClientId: string }) => e.targetClientId === client.id,
    );
    expect(entry).toMatchObject({ actor: "operator", targetClientId: client.id });
    expect(JSON.stringify(entry)).not.toContain(signingSecret);
  });

  it("gives a client without a signing secret one at once", async () => {
    const client = await createClient();
    const res = await call(`/api/2/client/${client.id}/signing-secret`, {
      method: "POST",
      headers: { ...bearer(operator), ...FORM },
      body: "",
    });
    const { signingSecret } = (await container(res)).data as { signingSecret: string };
    expect(await signsWith(client, signingSecret)).toBe(true);
  });
});

describe("POST /api/2/client/{clientId}/status", () => {
  it("disables a client: no token, no sign-in page, its tokens refused; enabling restores them", async () => {
    const client = await createClient({
      redirectUris: ["https://test.example/callback"],
      grantTypes: ["client_credentials", "authorization_code"],
    });
    const token = await serverToken(client);
    expect((await call("/api/2/clients", { headers: bearer(token) })).status).toBe(200);

    const res = await setStatus(admin, client.id, "disabled");
    expect((await container(res)).data).toEqual({ clientId: client.id, status: "disabled" });
    expect(await tokenStatus(client.id, client.secret)).toBe(401);
    const authorize = `/oauth/authorize?${new URLSearchParams({ client_id: client.id, redirect_uri: "https://test.example/callback", response_type: "code" })}`;
    await expectPage(await call(authorize), 400, "Sign-in cannot start");
    // The API learns of it within the policy's 5 seconds and a lease's.
    await vi.waitFor(
      async () => {
        const refused = await call("/api/2/clients", { headers: bearer(token) });
        if (refused.status !== 404) throw new Error(`still ${refused.status}`);
      },
      { timeout: 15_000, interval: 500 },
    );

    expect((await container(await setStatus(admin, client.id, "active"))).data.status).toBe("active");
    expect(await tokenStatus(client.id, client.secret)).toBe(200);
    const [enabled, disabled] = await auditOf(`action=client.status&clientId=${adminId}`);
    expect(enabled).toMatchObject({
      targetClientId: client.id,
      detail: { status: { from: "disabled", to: "active" } },
    });
    expect(disabled).toMatchObject({ detail: { status: { from: "active", to: "disabled" } } });
  }, 30_000);

  it("changes nothing for the status a client has, and refuses its own and bad values", async () => {
    const client = await createClient();
    expect((await setStatus(admin, client.id, "active")).status).toBe(200);
    expect(await auditOf(`action=client.status&clientId=${adminId}`)).not.toContainEqual(
      expect.objectContaining({ targetClientId: client.id }),
    );
    await expectError(await setStatus(admin, adminId, "disabled"), 400, "A client cannot change its own status");
    expect((await setStatus(admin, client.id, "deleted")).status).toBe(400);
    await expectError(
      await setStatus(await serverToken(client), client.id, "disabled"),
      401,
      "Your client doesn't have administration rights for this client",
    );
  });
});
