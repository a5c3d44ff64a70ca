import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { decodeProtectedHeader, generateKeyPair, importJWK, type JWK, SignJWT } from "jose";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../src/index";
import { issueAccessToken, verifyAccessToken } from "../src/oauth/tokens";
import { generateSigningKeys } from "../scripts/lib/keys";
import {
  appClient,
  BASE,
  basicAuth,
  bearer,
  call,
  container,
  postForm,
  serverToken,
  userToken,
  webClient,
} from "./helpers/http";

const now = () => Math.floor(Date.now() / 1000);

describe("sending a token", () => {
  it("accepts the Authorization: Bearer header", async () => {
    const res = await call("/api/2/clients", { headers: bearer(await serverToken()) });
    expect(res.status).toBe(200);
  });

  it("accepts the oauth_token query parameter", async () => {
    const res = await call(`/api/2/clients?oauth_token=${await serverToken()}`);
    expect(res.status).toBe(200);
  });

  it("refuses a token sent both ways", async () => {
    const token = await serverToken();
    const res = await call(`/api/2/clients?oauth_token=${token}`, { headers: bearer(token) });
    expect(res.status).toBe(400);
    expect((await container(res)).error).toMatchObject({ error: "invalid_request", type: "OAuthException" });
  });
});

describe("a malformed Authorization header", () => {
  const malformed = ["Bearer", "Bearer a b", "Basic YTpi", "Token abc", "Bearer\ta"];

  it.each(malformed)("is not passed over for oauth_token (%j)", async (header) => {
    const res = await call(`/api/2/clients?oauth_token=${await serverToken()}`, {
      headers: { Authorization: header },
    });
    expect(res.status).toBe(400);
    expect((await container(res)).error).toMatchObject({ error: "invalid_request", error_code: 400 });
  });

  it.each(malformed)("is refused on its own as a malformed request (%j)", async (header) => {
    const res = await call("/api/2/clients", { headers: { Authorization: header } });
    expect(res.status).toBe(400);
    expect((await container(res)).error!.error_description).toContain("Authorization header");
  });
});

describe("invalid tokens get 401 invalid_token", () => {
  async function expectInvalid(headers: Record<string, string>) {
    const res = await call("/api/2/clients", { headers });
    expect(res.status).toBe(401);
    expect(res.headers.get("WWW-Authenticate")).toMatch(/^Bearer/);
    const body = await container(res);
    expect(body.code).toBe(401);
    expect(body.error).toMatchObject({ error: "invalid_token", error_code: 401, type: "OAuthException" });
    expect(body.request).toEqual({ limit: 0, remaining: 0, reset: 0 });
    return body;
  }

  it("when no token is sent", async () => {
    await expectInvalid({});
  });

  it("when the token is not a JWT", async () => {
    await expectInvalid(bearer("not-a-token"));
  });

  it("when the payload was tampered with", async () => {
    const [header, payload, signature] = (await serverToken()).split(".");
    const claims = JSON.parse(atob(payload!.replace(/-/g, "+").replace(/_/g, "/")));
    const forged = btoa(JSON.stringify({ ...claims, mid: 20 }))
      .replace(/=+$/, "")
      .replace(/\+/g, "-")
      .replace(/\//g, "_");
    await expectInvalid(bearer(`${header}.${forged}.${signature}`));
  });

  it("when the token has expired", async () => {
    const expired = await issueAccessToken(
      env,
      { kind: "server", clientId: webClient.id, merchantId: 10, userId: null, scope: "", lifetime: 60 },
      now() - 3600,
    );
    const body = await expectInvalid(bearer(expired));
    expect(body.error!.error_description).toContain("expired");
  });

  it("when it is signed by a key we do not hold, even under our kid", async () => {
    const { privateKey } = await generateKeyPair("EdDSA", { crv: "Ed25519" });
    const kid = JSON.parse(env.TOKEN_SIGNING_KEYS)[0].kid as string;
    const token = await new SignJWT({ client_id: webClient.id, token_use: "server", mid: 10, scope: "" })
      .setProtectedHeader({ alg: "EdDSA", typ: "at+jwt", kid })
      .setIssuer("https://accounts.test")
      .setSubject(webClient.id)
      .setAudience("https://accounts.test/api")
      .setIssuedAt()
      .setExpirationTime("1h")
      .sign(privateKey);
    await expectInvalid(bearer(token));
  });

  it("when it is an unsigned token", async () => {
    const encode = (value: object) => btoa(JSON.stringify(value)).replace(/=+$/, "");
    const claims = {
      client_id: webClient.id,
      token_use: "server",
      mid: 10,
      iss: "https://accounts.test",
      aud: "https://accounts.test/api",
      sub: webClient.id,
      exp: now() + 600,
    };
    await expectInvalid(bearer(`${encode({ alg: "none", typ: "at+jwt" })}.${encode(claims)}.`));
  });

  it("when it was issued for another resource server", async () => {
    await expectInvalid(bearer(await serverToken(webClient, { resource: "api.nordicdaily.example" })));
  });
});

describe("a token this isolate has verified before", () => {
  afterEach(() => vi.useRealTimers());

  it("is refused once it expires", async () => {
    const token = await issueAccessToken(
      env,
      { kind: "server", clientId: webClient.id, merchantId: 10, userId: null, scope: "", lifetime: 10 },
      now(),
    );
    expect((await call("/api/2/clients", { headers: bearer(token) })).status).toBe(200);
    // Well within the time an isolate trusts a token it verified.
    vi.useFakeTimers({ toFake: ["Date"], now: (now() + 10) * 1000 });
    const res = await call("/api/2/clients", { headers: bearer(token) });
    expect(res.status).toBe(401);
    expect((await container(res)).error!.error_description).toContain("expired");
  });

  it("is refused under another issuer (base URL), though the same keys verified it", async () => {
    const token = await serverToken();
    expect((await verifyAccessToken(env, token)).clientId).toBe(webClient.id);
    await expect(verifyAccessToken({ ...env, BASE_URL: "https://other.example" }, token)).rejects.toMatchObject({
      status: 401,
    });
  });

  it("still needs this API's audience, though introspection (any of our audiences) accepted it", async () => {
    const token = await serverToken(webClient, { resource: "api.nordicdaily.example" });
    const introspected = await postForm("/oauth/introspect", { token }, basicAuth(webClient.id, webClient.secret));
    expect(await introspected.json()).toMatchObject({ active: true });
    const res = await call("/api/2/clients", { headers: bearer(token) });
    expect(res.status).toBe(401);
    expect((await container(res)).error).toMatchObject({ error: "invalid_token" });
  });
});

describe("claims are read as we issue them, nothing looser", () => {
  /** A token signed with our own current key, so only its claims can be wrong. */
  async function signed(
    subject: unknown,
    tokenUse: "user" | "server",
    mid: unknown = 10,
    claims: Record<string, unknown> = {},
  ): Promise<string> {
    const [jwk] = JSON.parse(env.TOKEN_SIGNING_KEYS) as JWK[];
    const key = await importJWK(jwk!, "EdDSA");
    return new SignJWT({
      client_id: webClient.id,
      token_use: tokenUse,
      mid,
      scope: "",
      sub: subject as string /* any JSON, on purpose */,
      jti: crypto.randomUUID(),
      ...claims /* undefined drops a claim */,
    })
      .setProtectedHeader({ alg: "EdDSA", typ: "at+jwt", kid: jwk!.kid! })
      .setIssuer("https://accounts.test")
      .setAudience("https://accounts.test/api")
      .setIssuedAt()
      .setExpirationTime("1h")
      .sign(key);
  }

  it("accepts a user id in canonical decimal (the control case)", async () => {
    const res = await call("/api/2/me", { headers: bearer(await signed("1001", "user")) });
    expect(res.status).toBe(200);
    expect((await container(res)).data.userId).toBe("1001");
  });

  it.each([" 1001", "1001 ", "0x3e9", "01001", "1001.0", "1.001e3", "+1001", "", "0", "99999999999999999"])(
    "refuses the user subject %j",
    async (subject) => {
      const res = await call("/api/2/me", { headers: bearer(await signed(subject, "user")) });
      expect(res.status).toBe(401);
      expect((await container(res)).error).toMatchObject({ error: "invalid_token" });
    },
  );

  it.each([[1001], [["1001"]], [{ id: "1001" }]])(
    "refuses the user subject %j, which is not a string",
    async (subject) => {
      const res = await call("/api/2/me", { headers: bearer(await signed(subject, "user")) });
      expect(res.status).toBe(401);
    },
  );

  it("refuses a server token whose subject is not its own client", async () => {
    const res = await call("/api/2/clients", { headers: bearer(await signed(appClient.id, "server")) });
    expect(res.status).toBe(401);
  });

  it.each([
    ["no jti", { jti: undefined }],
    ["a jti that is not a string", { jti: 7 }],
    ["a grant that is not a string", { gid: ["a"] }],
  ])("refuses a token with %s, as revocation needs them", async (_, claims) => {
    const res = await call("/api/2/clients", { headers: bearer(await signed(webClient.id, "server", 10, claims)) });
    expect(res.status).toBe(401);
  });

  it.each([["10"], [10.5], [null]])("refuses the merchant claim %j", async (mid) => {
    const res = await call("/api/2/clients", { headers: bearer(await signed(webClient.id, "server", mid)) });
    expect(res.status).toBe(401);
  });
});

describe("token types", () => {
  it("refuses a user token on a server-token endpoint with 403", async () => {
    const res = await call("/api/2/clients", { headers: bearer(await userToken()) });
    expect(res.status).toBe(403);
    const body = await container(res);
    expect(body.error).toMatchObject({ error: "access_denied", error_code: 403 });
    expect(body.error!.error_description).toContain("Access token rejected");
  });

  it("refuses a server token on a user-token endpoint with 403", async () => {
    const res = await call("/api/2/me", { headers: bearer(await serverToken()) });
    expect(res.status).toBe(403);
    expect((await container(res)).error!.error_description).toContain("Access token rejected");
  });
});

describe("signing key rotation", () => {
  it("signs with the new first key, publishes both, and still accepts tokens of the old one", async () => {
    const oldKeys = JSON.parse(env.TOKEN_SIGNING_KEYS) as { kid: string }[];
    const [newKey] = JSON.parse(await generateSigningKeys()) as [{ kid: string }];
    const rotated = { ...env, TOKEN_SIGNING_KEYS: JSON.stringify([newKey, ...oldKeys]) };
    const fetchRotated = (path: string, init?: RequestInit) =>
      worker.fetch(new Request(`${BASE}${path}`, init), rotated, createExecutionContext());

    const jwks = (await (await fetchRotated("/oauth/jwks")).json()) as { keys: { kid: string; d?: string }[] };
    expect(jwks.keys.map((k) => k.kid)).toEqual([newKey.kid, ...oldKeys.map((k) => k.kid)]);
    expect(jwks.keys.every((k) => k.d === undefined)).toBe(true);

    const issued = await fetchRotated("/oauth/token", {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", ...basicAuth(webClient.id, webClient.secret) },
      body: "grant_type=client_credentials",
    });
    const { access_token: newToken } = (await issued.json()) as { access_token: string };
    expect(decodeProtectedHeader(newToken).kid).toBe(newKey.kid);
    expect((await fetchRotated("/api/2/clients", { headers: bearer(newToken) })).status).toBe(200);

    const oldToken = await serverToken();
    expect(decodeProtectedHeader(oldToken).kid).toBe(oldKeys[0]!.kid);
    expect((await fetchRotated("/api/2/clients", { headers: bearer(oldToken) })).status).toBe(200);
    expect((await call("/api/2/clients", { headers: bearer(newToken) })).status).toBe(401);
  });
});
