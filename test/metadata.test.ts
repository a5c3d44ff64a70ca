import { describe, expect, it } from "vitest";
import { BASE, basicAuth, call, claimsOf, container, postForm, webClient } from "./helpers/http";

async function metadata() {
  const res = await call("/.well-known/oauth-authorization-server");
  return { res, body: (await res.json()) as Record<string, unknown> };
}

describe("GET /.well-known/oauth-authorization-server (RFC 8414)", () => {
  it("names this deployment: issuer exactly the base URL, its token endpoint and keys", async () => {
    const { res, body } = await metadata();
    expect(res.status).toBe(200);
    expect(res.headers.get("Cache-Control")).toBe("public, max-age=300");
    expect(body).toMatchObject({
      issuer: BASE,
      authorization_endpoint: `${BASE}/oauth/authorize`,
      token_endpoint: `${BASE}/oauth/token`,
      jwks_uri: `${BASE}/.well-known/jwks.json`,
      // `none`: public clients, by client_id alone, for the code and refresh grants.
      token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
      response_types_supported: ["code"],
      code_challenge_methods_supported: ["S256"],
      authorization_response_iss_parameter_supported: true,
      revocation_endpoint: `${BASE}/oauth/revoke`,
      // `none` again: a public client revokes its own tokens by client_id alone (RFC 7009 §2.1).
      revocation_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
      introspection_endpoint: `${BASE}/oauth/introspect`,
      // No `none`: introspection wants an authenticated caller (RFC 7662 §2.1).
      introspection_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
    });
  });

  it("lists exactly the grants the status endpoint lists", async () => {
    const { body } = await metadata();
    const status = await container(await call("/api/2/status"));
    expect(body.grant_types_supported).toEqual(status.data.oauth.grantTypes.split("|"));
    // The spec's status samples list these six; token exchange comes on top.
    expect(body.grant_types_supported).toEqual([
      "authorization_code",
      "password",
      "assertion",
      "refresh_token",
      "client_credentials",
      "urn:ietf:params:oauth:grant-type:jwt-bearer",
      "urn:ietf:params:oauth:grant-type:token-exchange",
    ]);
  });

  it("points at endpoints that answer, and keys that verify its tokens' issuer", async () => {
    const { body } = await metadata();
    const keys = await call(new URL(body.jwks_uri as string).pathname);
    expect(keys.status).toBe(200);
    const token = await postForm(
      new URL(body.token_endpoint as string).pathname,
      { grant_type: "client_credentials" },
      basicAuth(webClient.id, webClient.secret),
    );
    const { access_token } = (await token.json()) as { access_token: string };
    expect(claimsOf(access_token).iss).toBe(body.issuer);
  });
});
