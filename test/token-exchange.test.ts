import { describe, expect, it } from "vitest";
import { env } from "cloudflare:workers";
import { issueAccessToken } from "../src/oauth/tokens";
import {
  basicAuth,
  bearer,
  call,
  claimsOf,
  container,
  expectOAuthError,
  postForm,
  serverToken,
  userTokenResponse,
} from "./helpers/http";
import { createClient, createUser } from "./helpers/seed";

const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token";
const CALLBACK = "https://test.example/callback";

let nextUser = 9_700 + Math.floor(Math.random() * 40) * 10;

async function newClient(overrides: Record<string, unknown> = {}) {
  const client = await createClient({
    grantTypes: ["password", "client_credentials", "refresh_token", TOKEN_EXCHANGE],
    autoApprove: true,
    ...overrides,
  });
  return { ...client, redirectUris: [CALLBACK] };
}

/** A user signed in at client A; client B of the same merchant. */
async function setting() {
  const a = await newClient();
  const b = await newClient();
  const user = await createUser(nextUser++, { clients: [a.id] });
  const tokens = await userTokenResponse(user, a);
  return { a, b, user, subjectToken: tokens.access_token };
}

function exchange(client: { id: string; secret: string }, fields: Record<string, string>) {
  return postForm(
    "/oauth/token",
    { grant_type: TOKEN_EXCHANGE, subject_token_type: ACCESS_TOKEN, ...fields },
    basicAuth(client.id, client.secret),
  );
}

const expectRefused = expectOAuthError;

describe("grant_type=urn:ietf:params:oauth:grant-type:token-exchange (RFC 8693)", () => {
  it("gives client B its own token and a refresh token for the user of A's token", async () => {
    const { a, b, user, subjectToken } = await setting();
    const res = await exchange(b, { subject_token: subjectToken });
    expect(res.status).toBe(200);
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    const body = (await res.json()) as Record<string, string>;
    expect(body).toMatchObject({
      token_type: "Bearer",
      issued_token_type: ACCESS_TOKEN,
      user_id: user.row.userId,
      is_admin: false,
      refresh_token: expect.any(String),
    });
    expect(claimsOf(body.access_token!).client_id).toBe(b.id);
    expect(b.id).not.toBe(a.id);
    const me = await container(await call("/api/2/me", { headers: bearer(body.access_token!) }));
    expect(me.data.userId).toBe(user.row.userId);
  });

  it("accepts the JWT token type and an explicit requested_token_type", async () => {
    const { b, subjectToken } = await setting();
    const res = await exchange(b, {
      subject_token: subjectToken,
      subject_token_type: "urn:ietf:params:oauth:token-type:jwt",
      requested_token_type: ACCESS_TOKEN,
    });
    expect(res.status).toBe(200);
  });

  it("refuses a token of a client of another merchant", async () => {
    const { subjectToken } = await setting();
    const elsewhere = await newClient({ merchantId: 20 });
    await expectRefused(await exchange(elsewhere, { subject_token: subjectToken }), "invalid_request", "merchant");
  });

  it("refuses a revoked subject token", async () => {
    const { a, b, subjectToken } = await setting();
    await postForm("/oauth/revoke", { token: subjectToken }, basicAuth(a.id, a.secret));
    await expectRefused(await exchange(b, { subject_token: subjectToken }), "invalid_request", "revoked");
  });

  it("refuses a server token as the subject", async () => {
    const { a, b } = await setting();
    await expectRefused(await exchange(b, { subject_token: await serverToken(a) }), "invalid_request", "user");
  });

  it("refuses a subject token whose user has been blocked", async () => {
    const { b, user, subjectToken } = await setting();
    await createUser(Number(user.row.userId), { ...user.row, status: -2 });
    await expectRefused(await exchange(b, { subject_token: subjectToken }), "invalid_request", "blocked");
  });

  it("refuses garbage, a refresh token and an expired token as the subject", async () => {
    const { a, b, user } = await setting();
    const expired = await issueAccessToken(
      env,
      { kind: "user", clientId: a.id, merchantId: 10, userId: Number(user.row.userId), scope: "", lifetime: 60 },
      Math.floor(Date.now() / 1000) - 3600,
    );
    await expectRefused(await exchange(b, { subject_token: expired }), "invalid_request", "expired");
    await expectRefused(await exchange(b, { subject_token: "garbage" }), "invalid_request", "invalid");
    const tokens = await userTokenResponse(user, a);
    await expectRefused(
      await exchange(b, { subject_token: tokens.refresh_token as string }),
      "invalid_request",
      "invalid",
    );
  });

  it.each([
    ["no subject_token", { subject_token: undefined }, "invalid_request"],
    ["no subject_token_type", { subject_token_type: undefined }, "invalid_request"],
    [
      "a refresh-token subject type",
      { subject_token_type: "urn:ietf:params:oauth:token-type:refresh_token" },
      "invalid_request",
    ],
    [
      "an ID token as the requested type",
      { requested_token_type: "urn:ietf:params:oauth:token-type:id_token" },
      "invalid_request",
    ],
    ["an actor token", { actor_token: "anything" }, "invalid_request"],
    ["another audience", { audience: "https://elsewhere.example" }, "invalid_target"],
  ])("refuses %s", async (_, fields, error) => {
    const { b, subjectToken } = await setting();
    const body = Object.fromEntries(
      Object.entries({ subject_token: subjectToken, subject_token_type: ACCESS_TOKEN, ...fields }).filter(
        ([, value]) => value !== undefined,
      ),
    ) as Record<string, string>;
    const res = await postForm("/oauth/token", { grant_type: TOKEN_EXCHANGE, ...body }, basicAuth(b.id, b.secret));
    await expectRefused(res, error);
  });

  it("needs the user's consent to B, as the password grant does: a connection or autoApprove", async () => {
    const { a, user, subjectToken } = await setting();
    const b = await newClient({ autoApprove: false });
    await expectRefused(await exchange(b, { subject_token: subjectToken }), "invalid_grant", "not granted");
    await createUser(Number(user.row.userId), { ...user.row, clients: [a.id, b.id] });
    expect((await exchange(b, { subject_token: subjectToken })).status).toBe(200);
  });

  it("is refused to a client not allowed the grant", async () => {
    const { subjectToken } = await setting();
    const b = await newClient({ grantTypes: ["password"] });
    const res = await exchange(b, { subject_token: subjectToken });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: "unauthorized_client" });
  });
});
