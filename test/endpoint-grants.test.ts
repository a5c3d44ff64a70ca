import { describe, expect, it } from "vitest";
import { API_ENDPOINTS } from "../src/schemas/api-endpoints";
import { describeImportErrors, importFileSchema } from "../src/schemas/import";
import { bearer, call, type Container, ingrid, serverToken, userToken, webClient } from "./helpers/http";
import { createClient } from "./helpers/seed";

const NOT_GRANTED = "Client is not authorized to access this API endpoint (access must be requested)";

/** One call of each granted endpoint, with the token kind it takes. */
const CALLS: Record<
  (typeof API_ENDPOINTS)[number],
  { path: string; token: "server" | "user" | "operator"; init?: RequestInit }
> = {
  clients: { path: "/api/2/clients", token: "server" },
  me: { path: "/api/2/me", token: "user" },
  users: { path: "/api/2/users", token: "server" },
  user: { path: "/api/2/user/1001", token: "server" },
  mail: { path: "/api/2/mail?id=1001", token: "server" },
  digitalcontents: { path: "/api/2/digitalcontents", token: "server" },
  products: { path: "/api/2/products", token: "server" },
  devices: {
    path: "/api/2/devices",
    token: "user",
    init: {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: "deviceId=grant-test&platform=iPhone&applicationName=Reader",
    },
  },
  exchange: {
    path: "/api/2/oauth/exchange",
    token: "user",
    init: {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: `clientId=${webClient.id}&type=code`,
    },
  },
  describe: { path: "/api/2/describe/User", token: "server" },
  "user/product": { path: "/api/2/user/1001/product/502", token: "server" },
  "user/products": { path: "/api/2/user/1001/products", token: "server" },
  userinfo: { path: "/oauth/userinfo", token: "user" },
  // Management calls name a user who does not exist: served (404), and nobody's account changes.
  "user/status": {
    path: "/api/2/user/999999/status",
    token: "server",
    init: { method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: "status=blocked" },
  },
  "user/logout": { path: "/api/2/user/999999/logout", token: "server", init: { method: "POST" } },
  "user/connection": { path: "/api/2/user/999999/connection", token: "server", init: { method: "DELETE" } },
  "user/erase": { path: "/api/2/user/999999", token: "server", init: { method: "DELETE" } },
  "user/export": { path: "/api/2/user/999999/export", token: "server" },
  "user/create": {
    path: "/api/2/user",
    token: "server",
    init: {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: `email=grant-${crypto.randomUUID()}%40example.org`,
    },
  },
  "user/update": {
    path: "/api/2/user/999999",
    token: "server",
    init: { method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: "displayName=x" },
  },
  product: { path: "/api/2/product/999999999", token: "server" },
  "client/secret": {
    path: "/api/2/client/no-such-client/secret",
    token: "server",
    init: { method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: "" },
  },
  "client/signing-secret": {
    path: "/api/2/client/no-such-client/signing-secret",
    token: "server",
    init: { method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: "" },
  },
  "client/callbacks": {
    path: "/api/2/client/no-such-client/callbacks/replay",
    token: "server",
    init: { method: "POST" },
  },
  "client/create": {
    path: "/api/2/client",
    token: "server",
    init: { method: "POST", headers: { "Content-Type": "application/json" }, body: '{"name":"Granted"}' },
  },
  "client/update": {
    path: "/api/2/client/no-such-client",
    token: "server",
    init: { method: "POST", headers: { "Content-Type": "application/json" }, body: '{"name":"x"}' },
  },
  "client/status": {
    path: "/api/2/client/no-such-client/status",
    token: "server",
    init: { method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: "status=disabled" },
  },
  audit: { path: "/api/2/audit", token: "server" },
  // The operator's alone; with no rotation under way, a report that there is none.
  keys: {
    path: "/api/2/keys/reseal",
    token: "operator",
    init: { method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: "" },
  },
  register: {
    path: "/oauth/register",
    token: "server",
    init: {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ client_name: "Granted", grant_types: ["client_credentials"], response_types: [] }),
    },
  },
  signin: {
    path: "/api/2/signin",
    token: "server",
    init: {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: `identifier=grant-${crypto.randomUUID()}%40example.org&redirectUri=${encodeURIComponent("https://test.example/callback")}`,
    },
  },
};

async function clientWith(apiEndpoints: string[] | null) {
  // An admin client, which may register clients too.
  const client = await createClient({ apiEndpoints, autoApprove: true, admin: true });
  const tokens = {
    server: await serverToken(client),
    operator: await serverToken(await createClient({ apiEndpoints, universalDataAccess: true })),
    user: await userToken(ingrid, { ...client, redirectUris: ["https://test.example/callback"] }, "openid"),
  };
  return async (endpoint: keyof typeof CALLS) => {
    const { path, token, init = {} } = CALLS[endpoint];
    const res = await call(path, { ...init, headers: { ...bearer(tokens[token]), ...init.headers } });
    // /oauth/userinfo answers bare JSON, its errors in the OAuth format (not in the container).
    const json = (await res.json()) as Container | NonNullable<Container["error"]>;
    const body = "error_code" in json ? ({ error: json } as unknown as Container) : (json as Container);
    return { res, body };
  };
}

describe("endpoint grants (the import's apiEndpoints)", () => {
  it("lets a client without a grant list call every endpoint", async () => {
    const callAs = await clientWith(null);
    for (const endpoint of API_ENDPOINTS) {
      const { res, body } = await callAs(endpoint);
      // Served: a success, or the endpoint's own "nothing here" for a fresh client.
      expect([200, 201, 404], endpoint).toContain(res.status);
      expect(body.error?.error_description ?? "", endpoint).not.toBe(NOT_GRANTED);
    }
  });

  it("refuses every endpoint not in the list with the spec's 403, and serves the listed ones", async () => {
    const callAs = await clientWith(["products", "me"]);
    // A fresh client has no products: its 404 shows the call was let through.
    expect((await callAs("products")).body.error?.error_description).toBe("No products found");
    expect((await callAs("me")).res.status).toBe(200);
    for (const endpoint of API_ENDPOINTS.filter((e) => e !== "products" && e !== "me")) {
      const { res, body } = await callAs(endpoint);
      expect(res.status, endpoint).toBe(403);
      const error = { error: "access_denied", error_code: 403, type: "OAuthException", error_description: NOT_GRANTED };
      const bare = CALLS[endpoint].path.startsWith("/oauth/");
      expect(body.error).toEqual(bare ? error : { ...error, code: 403, description: NOT_GRANTED });
    }
  });

  it("does not spend the quota on a refused endpoint", async () => {
    const callAs = await clientWith(["products", "me"]);
    const before = (await callAs("products")).body.request.remaining;
    await callAs("users");
    await callAs("clients");
    expect((await callAs("products")).body.request.remaining).toBe(before - 1);
  });

  it("refuses an empty list for everything", async () => {
    const callAs = await clientWith([]);
    expect((await callAs("products")).res.status).toBe(403);
  });

  it("never answers the public endpoints with the grant's 403", async () => {
    expect((await call("/api/2/status")).status).toBe(200);
    expect((await call("/api/2/version")).status).toBe(200);
  });

  it.each([
    ["an unknown endpoint", ["products", "orders"], "clients[0].apiEndpoints[1]"],
    ["a repeated endpoint", ["products", "products"], "clients[0].apiEndpoints"],
  ])("refuses %s at import", (_, apiEndpoints, path) => {
    const parsed = importFileSchema.safeParse({
      clients: [{ id: "c", secret: "a secret of sixteen+", name: "c", merchantId: 1, apiEndpoints }],
    });
    expect(parsed.success).toBe(false);
    expect(describeImportErrors(parsed.error!).some((line) => line.startsWith(`${path}:`))).toBe(true);
  });
});
