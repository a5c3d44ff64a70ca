/**
 * Creating and changing clients through the API (docs/management.md "Creating and changing
 * clients"): a client made by an admin client works at once with the secrets it answered once, a
 * retried create answers the same client, an update changes only what it sends and takes effect
 * (redirect URIs, endpoint grants, callback URL), and each refusal by role and by rule.
 */
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { verifySignedResponse } from "../docs/verify-signed-response";
import { POLICY_TTL_MS } from "../src/durable-objects/client-policy";
import { LEASE_MS } from "../src/durable-objects/lease-lifetime";
import { expectPage } from "./helpers/browser";
import { basicAuth, bearer, call, container, postForm, serverToken } from "./helpers/http";
import { createClient, createUser, importData } from "./helpers/seed";

const JSON_TYPE = { "Content-Type": "application/json" };
let admin: string;
let adminId: string;
let operator: string;

beforeAll(async () => {
  await importData({ merchants: [{ merchantId: 92, name: "Settings operator" }] });
  const adminClient = await createClient({ admin: true });
  adminId = adminClient.id;
  admin = await serverToken(adminClient);
  operator = await serverToken(await createClient({ merchantId: 92, universalDataAccess: true }));
});
afterEach(() => vi.useRealTimers());

function create(token: string, settings: unknown, headers: Record<string, string> = {}) {
  return call("/api/2/client", {
    method: "POST",
    headers: { ...bearer(token), ...JSON_TYPE, ...headers },
    body: JSON.stringify(settings),
  });
}

function update(token: string, clientId: string, settings: unknown) {
  return call(`/api/2/client/${clientId}`, {
    method: "POST",
    headers: { ...bearer(token), ...JSON_TYPE },
    body: JSON.stringify(settings),
  });
}

async function expectError(res: Response, status: number, description: string | RegExp) {
  expect(res.status).toBe(status);
  expect((await container(res)).error?.error_description).toMatch(description);
}

type Settings = Record<string, any>;

async function made(res: Response): Promise<Settings> {
  expect(res.status).toBe(201);
  return (await container(res)).data as Settings;
}

const SHOP = {
  name: "Nordic Daily Shop",
  redirectUris: ["https://shop.example/callback"],
  grantTypes: ["authorization_code", "client_credentials"],
};

describe("POST /api/2/client", () => {
  it("makes a client of the admin's merchant that works at once with the secrets answered once", async () => {
    const client = await made(await create(admin, { ...SHOP, rateLimit: { limit: 100, windowSeconds: 3600 } }));
    expect(client).toMatchObject({
      merchantId: 10,
      name: SHOP.name,
      status: "active",
      redirectUris: SHOP.redirectUris,
      grantTypes: SHOP.grantTypes,
      public: false,
      admin: false,
      rateLimit: { limit: 100, windowSeconds: 3600 },
      apiEndpoints: null,
      callbackUrl: null,
    });
    expect(client.clientId).toMatch(/^[0-9a-f]{24}$/);
    const token = await serverToken({ id: client.clientId, secret: client.clientSecret });
    // Its signing secret signs its responses.
    const signed = await call("/api/2/clients?signed=1", { headers: bearer(token) });
    expect(await verifySignedResponse(await signed.json(), client.signingSecret)).not.toBeNull();
    // The trail names the fields set, never a secret.
    const trail = await container(
      await call(`/api/2/audit?action=client.create&clientId=${adminId}`, { headers: bearer(admin) }),
    );
    const entry = Object.values(trail.data as object).find((e: Settings) => e.targetClientId === client.clientId);
    expect(entry).toMatchObject({
      actor: "admin",
      detail: { fields: ["grantTypes", "name", "rateLimit", "redirectUris"] },
    });
    expect(JSON.stringify(trail)).not.toContain(client.clientSecret);
  });

  it("makes a public client without a secret, and refuses it the grants only a confidential client has", async () => {
    const native = await made(
      await create(admin, {
        name: "App",
        public: true,
        redirectUris: ["http://127.0.0.1/callback"],
        grantTypes: ["authorization_code", "refresh_token"],
      }),
    );
    expect(native.public).toBe(true);
    expect(native.clientSecret).toBeUndefined();
    await expectError(
      await create(admin, { name: "App", public: true, grantTypes: ["client_credentials"] }),
      400,
      "grantTypes: a public client has no client_credentials grant",
    );
    await expectError(
      await create(admin, { name: "Web", redirectUris: ["http://127.0.0.1/callback"] }),
      400,
      /redirectUris: http:\/\/127.0.0.1\/callback: redirect URIs must be absolute https URLs/,
    );
  });

  it("answers a retry with the same Idempotency-Key with the same client and secrets, and refuses the key for another request", async () => {
    const key = { "Idempotency-Key": `create-${crypto.randomUUID()}` };
    const [first, again] = [await made(await create(admin, SHOP, key)), await made(await create(admin, SHOP, key))];
    expect(again).toEqual(first);
    await expectError(await create(admin, { ...SHOP, name: "Other" }, key), 422, /another request/);
  });

  it("refuses bad input with a 400 that names it, never a 500", async () => {
    await expectError(await create(admin, { redirectUris: [] }), 400, "Parameter 'name' is missing");
    await expectError(await create(admin, { name: "X", secret: "mine" }), 400, "Unknown parameter 'secret'");
    await expectError(await create(admin, { name: "X", grantTypes: ["implicit"] }), 400, /grantTypes/);
    await expectError(await create(admin, { name: "X", accessTokenLifetime: 1 }), 400, /accessTokenLifetime/);
    await expectError(await create(admin, { name: "X", ipAllowList: ["not-an-ip"] }), 400, /ipAllowList/);
    await expectError(await create(admin, { name: "X", callbackUrl: "http://example.com/cb" }), 400, /callbackUrl/);
    await expectError(await create(admin, { name: "X", logoUri: "javascript:alert(1)" }), 400, /logoUri/);
    await expectError(await create(admin, { name: "X", scope: "openid admin" }), 400, /scope/);
    await expectError(
      await create(admin, {
        name: "X",
        redirectUris: ["https://a.example/cb"],
        defaultRedirectUri: "https://b.example/cb",
      }),
      400,
      "defaultRedirectUri must be one of redirectUris",
    );
    await expectError(
      await create(admin, { name: "X", grantTypes: ["authorization_code"] }),
      400,
      /needs redirectUris/,
    );
    const raw = (body: string, type = "application/json") =>
      call("/api/2/client", { method: "POST", headers: { ...bearer(admin), "Content-Type": type }, body });
    await expectError(await raw("name=X", "application/x-www-form-urlencoded"), 400, /application\/json/);
    const malformed = await raw("{not json");
    expect(malformed.status).toBe(400);
    await expectError(await raw("[1,2]"), 400, /invalid/);
  });

  it("is an admin client's for its own merchant, never with the operator's rights or more than it has", async () => {
    await expectError(
      await create(admin, { ...SHOP, admin: true }),
      403,
      /only the operator's client gives a client rights \(admin\)/,
    );
    await expectError(await create(admin, { ...SHOP, universalDataAccess: true }), 403, /universalDataAccess/);
    await expectError(
      await create(admin, { ...SHOP, merchantId: 20 }),
      403,
      "An admin client makes clients of its own merchant only",
    );
    await expectError(
      await create(admin, { ...SHOP, rateLimit: { limit: 1_000_000, windowSeconds: 1 } }),
      403,
      /\(rateLimit\)/,
    );
    const limited = await createClient({ admin: true, apiEndpoints: ["clients", "client/create"] });
    const limitedToken = await serverToken(limited);
    await expectError(await create(limitedToken, { ...SHOP, apiEndpoints: ["users"] }), 403, /\(apiEndpoints\)/);
    // Made without endpoint grants, a client takes the admin's own.
    expect(await made(await create(limitedToken, SHOP))).toMatchObject({ apiEndpoints: ["clients", "client/create"] });
    expect((await create(limitedToken, { ...SHOP, apiEndpoints: ["clients"] })).status).toBe(201);
    const plain = await serverToken(await createClient());
    await expectError(await create(plain, SHOP), 401, "Your client doesn't have administration rights for this client");
  });

  it("gives no grant, consent bypass or token audience it lacks itself, and never a right", async () => {
    for (const grant of [
      "urn:ietf:params:oauth:grant-type:jwt-bearer",
      "urn:ietf:params:oauth:grant-type:token-exchange",
      "assertion",
    ]) {
      await expectError(await create(admin, { ...SHOP, grantTypes: [grant] }), 403, new RegExp(`grant type ${grant}`));
    }
    // The admin client of these tests holds the password grant itself: it may give it.
    expect((await create(admin, { ...SHOP, grantTypes: ["password"] })).status).toBe(201);
    await expectError(await create(admin, { ...SHOP, autoApprove: true }), 403, /\(autoApprove\)/);
    await expectError(await create(admin, { ...SHOP, jwt: true }), 403, /\(jwt\)/);
    await expectError(await create(admin, { ...SHOP, resources: ["api.other.example"] }), 403, /\(resources\)/);
    const client = await made(await create(admin, SHOP));
    await expectError(
      await update(admin, client.clientId, { grantTypes: ["urn:ietf:params:oauth:grant-type:jwt-bearer"] }),
      403,
      /grant type/,
    );
    await expectError(
      await update(admin, adminId, { grantTypes: ["client_credentials"] }),
      403,
      /does not change its own grantTypes/,
    );
    // What the operator gave a client beyond the admin's makes it the operator's to manage.
    const byOperator = await made(await create(operator, { ...SHOP, merchantId: 10, autoApprove: true }));
    expect(byOperator).toMatchObject({ autoApprove: true });
    await expectError(
      await update(admin, byOperator.clientId, { alias: "mine" }),
      401,
      /holding more than yours \(autoApprove\)/,
    );
    const payments = await createClient({ unregisteredPayments: true });
    await expectError(await update(admin, payments.id, { alias: "mine" }), 401, /\(unregisteredPayments\)/);
  });

  it("makes the clients of a limited admin no less limited: its quota and allow-list unless narrower ones are sent", async () => {
    const from = { "CF-Connecting-IP": "127.0.0.1" };
    const limited = await createClient({
      admin: true,
      rateLimit: { limit: 100, windowSeconds: 3600 },
      ipWhitelist: ["127.0.0.1", "::1"],
    });
    const token = await serverToken(limited, {}, from);
    const inherited = await made(await create(token, SHOP, from));
    expect(inherited).toMatchObject({
      rateLimit: { limit: 100, windowSeconds: 3600 },
      ipAllowList: ["127.0.0.1", "::1"],
    });
    await expectError(await create(token, { ...SHOP, rateLimit: null }, from), 403, /\(rateLimit\)/);
    await expectError(
      await create(token, { ...SHOP, rateLimit: { limit: 100, windowSeconds: 60 } }, from),
      403,
      /\(rateLimit\)/,
    );
    await expectError(await create(token, { ...SHOP, ipAllowList: [] }, from), 403, /ipAllowList/);
    await expectError(await create(token, { ...SHOP, ipAllowList: ["10.0.0.1"] }, from), 403, /ipAllowList/);
    expect(
      (
        await create(
          token,
          { ...SHOP, ipAllowList: ["127.0.0.1"], rateLimit: { limit: 10, windowSeconds: 3600 } },
          from,
        )
      ).status,
    ).toBe(201);
  });

  it("lets the operator make a client of any merchant, with rights", async () => {
    const client = await made(await create(operator, { ...SHOP, merchantId: 20, admin: true }));
    expect(client).toMatchObject({ merchantId: 20, admin: true });
    await expectError(await create(operator, { ...SHOP, merchantId: 999_999 }), 404, "Merchant not found");
  });
});

describe("POST /api/2/client/{clientId}", () => {
  it("changes only the settings sent, and the new redirect URI is taken at once", async () => {
    const client = await made(await create(admin, { ...SHOP, enableSso: true }));
    const next = "https://shop.example/next";
    const res = await update(admin, client.clientId, { redirectUris: [...SHOP.redirectUris, next], alias: "shop" });
    expect(res.status).toBe(200);
    const changed = (await container(res)).data as Settings;
    expect(changed).toMatchObject({ name: SHOP.name, alias: "shop", enableSso: true, grantTypes: SHOP.grantTypes });
    expect(changed.redirectUris).toEqual([...SHOP.redirectUris, next]);
    expect(changed.clientSecret).toBeUndefined();
    const authorize = (uri: string) =>
      call(
        `/oauth/authorize?${new URLSearchParams({ client_id: client.clientId, redirect_uri: uri, response_type: "code" })}`,
      );
    await expectPage(await authorize(next), 200, "Sign in");
    expect((await update(admin, client.clientId, { redirectUris: [next] })).status).toBe(200);
    expect((await authorize(SHOP.redirectUris[0]!)).status).toBe(400);
  });

  it("narrows a client's endpoint grants, which every call takes within a policy refresh and a lease", async () => {
    const client = await made(await create(admin, SHOP));
    const token = await serverToken({ id: client.clientId, secret: client.clientSecret });
    expect((await call("/api/2/clients", { headers: bearer(token) })).status).toBe(200);
    expect((await update(admin, client.clientId, { apiEndpoints: ["users"] })).status).toBe(200);
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + LEASE_MS + POLICY_TTL_MS + 1_000 });
    await expectError(
      await call("/api/2/clients", { headers: bearer(token) }),
      403,
      "Client is not authorized to access this API endpoint (access must be requested)",
    );
  });

  it("sets a callback URL the client's callbacks then go to", async () => {
    const client = await made(await create(admin, SHOP));
    const callbackUrl = `https://cs-${client.clientId}.receiver.test/callbacks`;
    expect((await update(admin, client.clientId, { callbackUrl })).status).toBe(200);
    const userId = 33_000 + Math.floor(Math.random() * 1_000);
    await createUser(userId, { clients: [client.clientId], emailVerified: "2024-01-02 00:00:00" });
    const blocked = await call(`/api/2/user/${userId}/status`, {
      method: "POST",
      headers: { ...bearer(admin), "Content-Type": "application/x-www-form-urlencoded" },
      body: "status=blocked",
    });
    expect(blocked.status).toBe(200);
    for (let waited = 0; waited < 20_000; waited += 200) {
      const arrived = (await (await env.RECEIVER.fetch("https://receiver/")).json()) as { url: string }[];
      if (arrived.some((arrival) => arrival.url === callbackUrl)) return;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    throw new Error("no callback at the URL set");
  });

  it("refuses what a client keeps, the operator's rights, and an admin loosening its own limits", async () => {
    const client = await made(await create(admin, SHOP));
    await expectError(await update(admin, client.clientId, {}), 400, "No field to change was sent");
    await expectError(
      await update(admin, client.clientId, { public: true }),
      400,
      /public is set when the client is made/,
    );
    await expectError(await update(admin, client.clientId, { merchantId: 20 }), 400, /merchantId/);
    await expectError(await update(admin, client.clientId, { admin: true }), 403, /\(admin\)/);
    await expectError(await update(admin, client.clientId, { redirectUris: ["ftp://x"] }), 400, /redirectUris/);
    for (const own of [{ rateLimit: null }, { apiEndpoints: null }, { ipAllowList: [] }]) {
      await expectError(await update(admin, adminId, own), 403, /does not change its own/);
    }
    expect((await update(admin, adminId, { alias: "back office" })).status).toBe(200);
    const otherAdmin = await createClient({ admin: true });
    await expectError(
      await update(admin, otherAdmin.id, { alias: "mine" }),
      401,
      /another admin or the operator's client/,
    );
    const fjord = await createClient({ merchantId: 20 });
    await expectError(await update(admin, fjord.id, { alias: "mine" }), 404, "Client ID mismatch");
    expect((await update(operator, otherAdmin.id, { admin: false })).status).toBe(200);
    // A client whose settings changed still authenticates as it did.
    expect((await update(admin, client.clientId, { name: "Renamed" })).status).toBe(200);
    const res = await postForm(
      "/oauth/token",
      { grant_type: "client_credentials" },
      basicAuth(client.clientId, client.clientSecret),
    );
    expect(res.status).toBe(200);
  });
});
