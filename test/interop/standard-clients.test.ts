/**
 * Unmodified standard OAuth client libraries against the running server (`npm start`), from its
 * metadata alone: openid-client (ClientSecretBasic) and oauth4webapi (ClientSecretPost). The only
 * option set is each library's own switch for plain http, which a local server needs.
 */
import * as oauth from "oauth4webapi";
import * as client from "openid-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import demo from "../../data/demo.json";
import { type RunningServer, startServer } from "../cli/running-server";

const [web, app] = demo.clients as [(typeof demo.clients)[number], (typeof demo.clients)[number]];
const [ingrid] = demo.users as [(typeof demo.users)[number]];
const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token";

let server: RunningServer;

beforeAll(async () => {
  server = await startServer();
}, 180_000);

afterAll(() => server?.stop(), 60_000);

const passwordParameters = () => ({
  username: ingrid.email,
  password: ingrid.password!,
  redirect_uri: web.redirectUris[0]!,
});

describe("openid-client", () => {
  async function configuration(id = web.id, secret = web.secret) {
    return client.discovery(new URL(server.base), id, undefined, client.ClientSecretBasic(secret), {
      algorithm: "oauth2",
      execute: [client.allowInsecureRequests],
    });
  }

  it("discovers the server from its metadata", async () => {
    const metadata = (await configuration()).serverMetadata();
    expect(metadata.issuer).toBe(server.base);
    expect(metadata.token_endpoint).toBe(`${server.base}/oauth/token`);
    expect(metadata.revocation_endpoint).toBe(`${server.base}/oauth/revoke`);
    expect(metadata.introspection_endpoint).toBe(`${server.base}/oauth/introspect`);
  });

  it("gets a server token, signs a user in with a password, refreshes, introspects and revokes", async () => {
    const config = await configuration();
    const serverTokens = await client.clientCredentialsGrant(config);
    expect(serverTokens.token_type.toLowerCase()).toBe("bearer");

    const userTokens = await client.genericGrantRequest(config, "password", passwordParameters());
    expect(userTokens.refresh_token).toEqual(expect.any(String));
    const refreshed = await client.refreshTokenGrant(config, userTokens.refresh_token!);
    expect(refreshed.refresh_token).not.toBe(userTokens.refresh_token);

    const live = await client.tokenIntrospection(config, refreshed.access_token);
    expect(live).toMatchObject({ active: true, client_id: web.id, sub: String(ingrid.userId) });
    expect((await client.tokenIntrospection(config, refreshed.refresh_token!)).active).toBe(true);

    await client.tokenRevocation(config, refreshed.access_token);
    expect((await client.tokenIntrospection(config, refreshed.access_token)).active).toBe(false);
    const me = await fetch(`${server.base}/api/2/me`, {
      headers: { Authorization: `Bearer ${refreshed.access_token}` },
    });
    expect(me.status).toBe(401);

    await client.tokenRevocation(config, refreshed.refresh_token!);
    await expect(client.refreshTokenGrant(config, refreshed.refresh_token!)).rejects.toMatchObject({
      error: "invalid_grant",
    });
  });

  it("discovers the OpenID Provider, validates the password grant's ID token, reads userinfo and refreshes", async () => {
    const config = await client.discovery(
      new URL(server.base),
      web.id,
      undefined,
      client.ClientSecretBasic(web.secret),
      {
        execute: [client.allowInsecureRequests],
      },
    );
    expect(config.serverMetadata().userinfo_endpoint).toBe(`${server.base}/oauth/userinfo`);
    const tokens = await client.genericGrantRequest(config, "password", {
      ...passwordParameters(),
      scope: "openid email",
    });
    const claims = tokens.claims()!;
    expect(claims).toMatchObject({ iss: server.base, aud: web.id, amr: ["pwd"] });
    const userinfo = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
    expect(userinfo).toMatchObject({ email: ingrid.email, legacy_user_id: String(ingrid.userId) });
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.claims()?.sub).toBe(claims.sub);
  });

  it("exchanges another client's user token for its own (RFC 8693)", async () => {
    const userTokens = await client.genericGrantRequest(await configuration(), "password", passwordParameters());
    const exchanged = await client.genericGrantRequest(await configuration(app.id, app.secret), TOKEN_EXCHANGE, {
      subject_token: userTokens.access_token,
      subject_token_type: ACCESS_TOKEN,
    });
    expect(exchanged).toMatchObject({ issued_token_type: ACCESS_TOKEN, user_id: String(ingrid.userId) });
  });

  it("redeems an exchange code with grant_type=authorization_code", async () => {
    const userTokens = await client.genericGrantRequest(await configuration(), "password", passwordParameters());
    const res = await fetch(`${server.base}/api/2/oauth/exchange`, {
      method: "POST",
      headers: { Authorization: `Bearer ${userTokens.access_token}` },
      body: new URLSearchParams({ clientId: app.id, type: "code" }),
    });
    expect(res.status).toBe(200);
    const { code } = ((await res.json()) as { data: { code: string } }).data;
    const tokens = await client.genericGrantRequest(await configuration(app.id, app.secret), "authorization_code", {
      code,
      redirect_uri: app.defaultRedirectUri!,
    });
    expect(tokens).toMatchObject({ user_id: String(ingrid.userId), refresh_token: expect.any(String) });
  });
});

describe("oauth4webapi", () => {
  const options = { [oauth.allowInsecureRequests]: true };
  const webClient: oauth.Client = { client_id: web.id };
  const auth = oauth.ClientSecretPost(web.secret);

  async function authorizationServer() {
    const issuer = new URL(server.base);
    return oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...options }),
    );
  }

  it("gets a server token, signs a user in with a password, refreshes, introspects and revokes", async () => {
    const as = await authorizationServer();
    const serverTokens = await oauth.processClientCredentialsResponse(
      as,
      webClient,
      await oauth.clientCredentialsGrantRequest(as, webClient, auth, new URLSearchParams(), options),
    );
    expect(serverTokens.access_token).toEqual(expect.any(String));

    const userTokens = await oauth.processGenericTokenEndpointResponse(
      as,
      webClient,
      await oauth.genericTokenEndpointRequest(
        as,
        webClient,
        auth,
        "password",
        new URLSearchParams(passwordParameters()),
        options,
      ),
    );
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      webClient,
      await oauth.refreshTokenGrantRequest(as, webClient, auth, userTokens.refresh_token!, options),
    );

    const introspect = async (token: string) =>
      oauth.processIntrospectionResponse(
        as,
        webClient,
        await oauth.introspectionRequest(as, webClient, auth, token, options),
      );
    expect(await introspect(refreshed.access_token)).toMatchObject({ active: true, client_id: web.id });

    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, webClient, auth, refreshed.refresh_token!, options),
    );
    expect((await introspect(refreshed.refresh_token!)).active).toBe(false);
    // Revoking the refresh token revoked its grant, the access tokens issued under it included.
    expect((await introspect(refreshed.access_token)).active).toBe(false);
    await expect(
      oauth.processRefreshTokenResponse(
        as,
        webClient,
        await oauth.refreshTokenGrantRequest(as, webClient, auth, refreshed.refresh_token!, options),
      ),
    ).rejects.toMatchObject({ error: "invalid_grant" });
  });
});
