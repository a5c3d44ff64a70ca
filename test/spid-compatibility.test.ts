/**
 * The exact requests SPiD's own clients make, and what they read of the answers, for the clients
 * that cannot run here (the PHP SDK `VGS_Client`, spid-client-java and sdk-java: neither PHP nor
 * Java packages come from npm or Debian). docs/spid-compatibility.md lists what each sends.
 */
import { describe, expect, it } from "vitest";
import {
  basicAuth,
  bearer,
  call,
  container,
  fjordClient,
  ingrid,
  serverToken,
  userToken,
  webClient,
} from "./helpers/http";
import { createUser } from "./helpers/seed";

const FORM = { "Content-Type": "application/x-www-form-urlencoded" };
const device = { deviceId: "SPID-COMPAT-1", platform: "Android", applicationName: "Nordic Daily" };

/** The PHP SDK's URL: every call carries `method` and `oauth_token` in its query (Client.php `_restserver`). */
function phpUrl(path: string, method: string, token: string, params: Record<string, string> = {}): string {
  return `${path}?${new URLSearchParams({ method, oauth_token: token, ...params })}`;
}

describe("the response container as SPiD's clients read it", () => {
  it("is named 'SPP Container', version 0.2, and carries no sig or algorithm when unsigned", async () => {
    const res = await call(phpUrl("/api/2/me", "GET", await userToken(ingrid)));
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ name: "SPP Container", version: "0.2", api: 2, code: 200, error: null });
    // The Java clients read `sig` and `algorithm` whenever the keys exist: null would break them.
    expect(body).not.toHaveProperty("sig");
    expect(body).not.toHaveProperty("algorithm");
    expect(Object.keys(body).at(-1)).toBe("data");
  });

  it("carries an error as the spec's four fields and SPiD's API exception (code, type, description)", async () => {
    const res = await call(phpUrl("/api/2/user/987654321", "GET", await serverToken()));
    expect(res.status).toBe(404);
    const body = await container(res);
    expect(body).toMatchObject({ name: "SPP Container", version: "0.2", code: 404, data: null });
    expect(body.error).toEqual({
      error: "invalid_request",
      error_code: 404,
      type: "ApiException",
      error_description: "User not found",
      code: 404,
      description: "User not found",
    });
  });

  it("gives an expired or unknown token a 401 whose error.code is 401 (the PHP SDK's cue to refresh)", async () => {
    // With no token, the PHP SDK sends its client id as the token.
    const res = await call(phpUrl("/api/2/me", "GET", webClient.id));
    expect(res.status).toBe(401);
    const { error } = await container(res);
    expect(error).toMatchObject({ error: "invalid_token", type: "OAuthException", code: 401 });
  });
});

describe("the PHP SDK's method parameter", () => {
  it("is accepted on GET, POST and list calls where it names the request's own method", async () => {
    const token = await userToken(await createUser(9601));
    expect((await call(phpUrl("/api/2/me.json", "GET", token))).status).toBe(200);
    const posted = await call(phpUrl("/api/2/devices", "POST", token), {
      method: "POST",
      headers: FORM,
      body: new URLSearchParams(device).toString(),
    });
    expect(posted.status).toBe(201);
    const server = await serverToken();
    const users = await call(phpUrl("/api/2/users", "GET", server, { limit: "5", filters: "merchant" }));
    expect(users.status).toBe(200);
    expect((await container(users)).type).toBe("collection");
    // Lower case, as a caller of `api('/me', 'get')` sends it.
    expect((await call(phpUrl("/api/2/products", "get", server))).status).toBe(200);
  });

  it("is accepted at the token endpoint, with the SDK's empty scope and state", async () => {
    const res = await call("/oauth/token?method=POST", {
      method: "POST",
      headers: FORM,
      body: new URLSearchParams({
        client_id: webClient.id,
        client_secret: webClient.secret,
        redirect_uri: webClient.redirectUris[0]!,
        grant_type: "client_credentials",
        scope: "",
        state: "",
      }).toString(),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    // sdk-java reads user_id on every token; SPiD answers false for a server token.
    expect(body).toMatchObject({ user_id: false, is_admin: false, expires_in: expect.any(Number) });
    expect(body).not.toHaveProperty("code");
  });

  it.each([
    ["a GET that says DELETE", "GET", "DELETE"],
    ["a GET that says POST", "GET", "POST"],
    ["a POST that says GET", "POST", "GET"],
    ["an unknown method", "GET", "PATCHY"],
    ["an empty value", "GET", ""],
  ])("never overrides the method: %s is a 400", async (_, method, named) => {
    const token = await userToken(ingrid);
    const res = await call(phpUrl("/api/2/me", named, token), {
      method,
      ...(method === "POST" && { headers: FORM, body: new URLSearchParams(device).toString() }),
    });
    expect(res.status).toBe(400);
    expect((await container(res)).error).toMatchObject({ error: "invalid_request", code: 400 });
  });

  it("refuses a repeated method, and a mismatched one at the token endpoint, with a 400", async () => {
    const token = await userToken(ingrid);
    expect((await call(`/api/2/me?method=GET&method=GET&oauth_token=${token}`)).status).toBe(400);
    const res = await call("/oauth/token?method=GET", {
      method: "POST",
      headers: { ...FORM, ...basicAuth(webClient.id, webClient.secret) },
      body: "grant_type=client_credentials",
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: "invalid_request", error_code: 400 });
  });
});

describe("reserved parameters", () => {
  it("are never an unknown parameter or a search criterion on a list", async () => {
    const token = await serverToken();
    const res = await call(
      `/api/2/users.jsonp?method=GET&oauth_token=${token}&callback=cb&signed=0&contextClientId=${webClient.id}&limit=1`,
    );
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(/^\/\*\*\/cb\(\{"name":"SPP Container"/);
  });

  it("take contextClientId as the calling client's own id, and refuse another client's with a 403", async () => {
    const token = await serverToken();
    expect((await call(`/api/2/clients?contextClientId=${webClient.id}`, { headers: bearer(token) })).status).toBe(200);
    const other = await call(`/api/2/clients?contextClientId=${fjordClient.id}`, { headers: bearer(token) });
    expect(other.status).toBe(403);
    expect((await container(other)).error).toMatchObject({ error: "access_denied", code: 403 });
    const twice = await call(`/api/2/clients?contextClientId=${webClient.id}&contextClientId=${webClient.id}`, {
      headers: bearer(token),
    });
    expect(twice.status).toBe(400);
  });
});

describe("the access token in a form body (spid-client-java and sdk-java on POST)", () => {
  it("is accepted as the only token of a form POST with no query", async () => {
    const token = await userToken(await createUser(9602));
    const res = await call("/api/2/devices", {
      method: "POST",
      headers: FORM,
      body: new URLSearchParams({ oauth_token: token, ...device }).toString(),
    });
    expect(res.status).toBe(201);
    expect((await container(res)).object).toBe("DeviceFingerprint");
  });

  it("is checked as any token: a wrong one is a 401", async () => {
    const res = await call("/api/2/devices", {
      method: "POST",
      headers: FORM,
      body: new URLSearchParams({ oauth_token: "not-a-token", ...device }).toString(),
    });
    expect(res.status).toBe(401);
  });

  it.each([
    ["with an Authorization header too", "header"],
    ["with oauth_token in the query too", "query"],
    ["twice in the body", "body"],
  ])("is one way of sending the token: %s is a 400", async (_, also) => {
    const token = await userToken(ingrid);
    const body = new URLSearchParams({ oauth_token: token, ...device });
    if (also === "body") body.append("oauth_token", token);
    const res = await call(`/api/2/devices${also === "query" ? `?oauth_token=${token}` : ""}`, {
      method: "POST",
      headers: { ...FORM, ...(also === "header" && bearer(token)) },
      body: body.toString(),
    });
    expect(res.status).toBe(400);
    expect((await container(res)).error).toMatchObject({ error: "invalid_request" });
  });

  it("is not read from a body that is not a form", async () => {
    const token = await userToken(ingrid);
    const res = await call("/api/2/devices", {
      method: "POST",
      headers: { "Content-Type": "text/plain" },
      body: new URLSearchParams({ oauth_token: token, ...device }).toString(),
    });
    expect(res.status).toBe(401);
  });
});

describe("product access as the SDKs call it", () => {
  // The demo web client's digital content product (502) and a user connected to it.
  const path = (userId: number) => `/api/2/user/${userId}/product/502`;

  it("grants with the token in the form body (Java), checks with it in the query (PHP), revokes with DELETE (both)", async () => {
    const userId = 9603;
    await createUser(userId);
    const server = await serverToken();
    const granted = await call(path(userId), {
      method: "POST",
      headers: FORM,
      body: new URLSearchParams({ oauth_token: server }).toString(),
    });
    expect(granted.status).toBe(200);
    expect((await container(granted)).data).toEqual({ productId: "502", result: true });
    const checked = await call(phpUrl(path(userId), "GET", server));
    expect((await container(checked)).data).toEqual({ productId: "502", result: true });
    const revoked = await call(phpUrl(path(userId), "DELETE", server), { method: "DELETE" });
    expect(revoked.status).toBe(200);
    expect((await container(revoked)).data).toMatchObject({ productId: "502", status: "-1" });
  });
});
