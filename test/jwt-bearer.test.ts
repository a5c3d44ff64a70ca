import { SignJWT } from "jose";
import { afterEach, describe, expect, it, vi } from "vitest";
import { BASE, basicAuth, bearer, call, container, expectOAuthError, postForm } from "./helpers/http";
import { createClient, createUser } from "./helpers/seed";

const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const SIGNING_SECRET = "a signing secret of the client";

let nextUser = 9_500 + Math.floor(Math.random() * 40) * 10;

/** A client allowed both assertion grants, and a user connected to it. */
async function setting(overrides: Record<string, unknown> = {}) {
  const client = await createClient({
    grantTypes: [JWT_BEARER, "assertion"],
    signingSecret: SIGNING_SECRET,
    ...overrides,
  });
  const user = await createUser(nextUser++, { clients: [client.id] });
  return { client, userId: user.row.userId, user };
}

const now = () => Math.floor(Date.now() / 1000);

/** An assertion as the client makes it; `claims` replace or (undefined) drop the defaults. */
function assertion(
  client: { id: string },
  sub: string,
  claims: Record<string, unknown> = {},
  { secret = SIGNING_SECRET, alg = "HS256" } = {},
) {
  const payload = {
    iss: client.id,
    sub,
    aud: `${BASE}/oauth/token`,
    exp: now() + 120,
    iat: now(),
    jti: crypto.randomUUID(),
    ...claims,
  };
  return new SignJWT(payload).setProtectedHeader({ alg }).sign(new TextEncoder().encode(secret));
}

function redeem(client: { id: string; secret: string }, jwt: string, grantType = JWT_BEARER, extra = {}) {
  return postForm(
    "/oauth/token",
    { grant_type: grantType, assertion: jwt, ...extra },
    basicAuth(client.id, client.secret),
  );
}

const expectInvalidGrant = (res: Response, description?: string) => expectOAuthError(res, "invalid_grant", description);

afterEach(() => {
  vi.useRealTimers();
});

describe("grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer (RFC 7523)", () => {
  it("answers a user token for the assertion's subject, without a refresh token", async () => {
    const { client, userId } = await setting();
    const res = await redeem(client, await assertion(client, userId));
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ token_type: "Bearer", user_id: userId, is_admin: false });
    expect(body).not.toHaveProperty("refresh_token");
    const me = await container(await call("/api/2/me", { headers: bearer(body.access_token as string) }));
    expect(me.data.userId).toBe(userId);
  });

  it("accepts the issuer as the audience too", async () => {
    const { client, userId } = await setting();
    expect((await redeem(client, await assertion(client, userId, { aud: BASE }))).status).toBe(200);
  });

  it("refuses a replayed assertion, also when the copies race", async () => {
    const { client, userId } = await setting();
    const jwt = await assertion(client, userId);
    expect((await redeem(client, jwt)).status).toBe(200);
    await expectInvalidGrant(await redeem(client, jwt), "already been used");
    const racing = await assertion(client, userId);
    const results = await Promise.all([1, 2, 3].map(() => redeem(client, racing)));
    expect(results.filter((res) => res.status === 200)).toHaveLength(1);
  });

  it("refuses a jti reused in a new assertion", async () => {
    const { client, userId } = await setting();
    expect((await redeem(client, await assertion(client, userId, { jti: "one" }))).status).toBe(200);
    await expectInvalidGrant(await redeem(client, await assertion(client, userId, { jti: "one" })), "already");
  });

  it("refuses an expired assertion (a controlled clock)", async () => {
    const { client, userId } = await setting();
    const jwt = await assertion(client, userId, { exp: now() + 60 });
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 61_000 });
    await expectInvalidGrant(await redeem(client, jwt), "expired");
  });

  it.each([
    ["signed with another secret", {}, { secret: "somebody else's secret" }, "invalid"],
    ["signed with another algorithm", {}, { alg: "HS512" }, "invalid"],
    ["issued by another client", { iss: "another-client-id" }, {}, "invalid"],
    ["addressed to another server", { aud: "https://elsewhere.example/oauth/token" }, {}, "invalid"],
    ["without exp", { exp: undefined }, {}, "invalid"],
    ["expiring too far ahead", { exp: now() + 3600 }, {}, "300 seconds"],
    ["without jti", { jti: undefined }, {}, "invalid"],
    ["with an empty jti", { jti: "" }, {}, "jti"],
    ["not valid yet", { nbf: now() + 60 }, {}, "invalid"],
  ])("refuses an assertion %s", async (_, claims, signing, description) => {
    const { client, userId } = await setting();
    await expectInvalidGrant(await redeem(client, await assertion(client, userId, claims, signing)), description);
  });

  it("refuses an unsigned assertion and garbage", async () => {
    const { client, userId } = await setting();
    const encode = (value: object) => btoa(JSON.stringify(value)).replace(/=+$/, "");
    const claims = { iss: client.id, sub: userId, aud: `${BASE}/oauth/token`, exp: now() + 60, jti: "x" };
    await expectInvalidGrant(await redeem(client, `${encode({ alg: "none" })}.${encode(claims)}.`));
    await expectInvalidGrant(await redeem(client, "not.a.jwt"));
  });

  it.each([["01001"], ["1001 "], ["abc"]])("refuses the subject %j, which is no userId", async (sub) => {
    const { client } = await setting();
    await expectInvalidGrant(await redeem(client, await assertion(client, sub)), "sub");
  });

  it("refuses a user not connected to the client, and a blocked one", async () => {
    const { client } = await setting();
    const stranger = await createUser(nextUser++, { clients: [] });
    await expectInvalidGrant(await redeem(client, await assertion(client, stranger.row.userId)), "not a user");
    const { client: other, userId, user } = await setting();
    await createUser(Number(userId), { ...user.row, clients: [other.id], status: -2 });
    await expectInvalidGrant(await redeem(other, await assertion(other, userId)), "blocked");
  });

  it("refuses a client without a signing secret", async () => {
    const { client, userId } = await setting({ signingSecret: undefined });
    await expectInvalidGrant(await redeem(client, await assertion(client, userId)), "signing secret");
  });

  it("is refused to a client not allowed the grant, and needs the assertion", async () => {
    const { client, userId } = await setting({ grantTypes: ["assertion"] });
    const res = await redeem(client, await assertion(client, userId));
    expect(await res.json()).toMatchObject({ error: "unauthorized_client" });
    const missing = await postForm("/oauth/token", { grant_type: JWT_BEARER }, basicAuth(client.id, client.secret));
    expect(await missing.json()).toMatchObject({ error: "unauthorized_client" });
    const { client: allowed } = await setting();
    const noAssertion = await postForm(
      "/oauth/token",
      { grant_type: JWT_BEARER },
      basicAuth(allowed.id, allowed.secret),
    );
    expect(noAssertion.status).toBe(400);
    expect(await noAssertion.json()).toMatchObject({ error: "invalid_request" });
  });
});

describe("grant_type=assertion (OAuth 2.0 draft 11), mapped onto the JWT checks", () => {
  it.each([[JWT_BEARER], ["urn:ietf:params:oauth:token-type:jwt"]])(
    "accepts a JWT assertion with assertion_type %s",
    async (assertionType) => {
      const { client, userId } = await setting();
      const res = await redeem(client, await assertion(client, userId), "assertion", { assertion_type: assertionType });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ user_id: userId });
    },
  );

  it("shares the jti record with jwt-bearer, so one assertion is not spent twice across the two grants", async () => {
    const { client, userId } = await setting();
    const jwt = await assertion(client, userId);
    expect((await redeem(client, jwt)).status).toBe(200);
    await expectInvalidGrant(await redeem(client, jwt, "assertion", { assertion_type: JWT_BEARER }), "already");
  });

  it("refuses a missing or unknown assertion_type", async () => {
    const { client, userId } = await setting();
    const missing = await redeem(client, await assertion(client, userId), "assertion");
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ error: "invalid_request" });
    const saml = await redeem(client, await assertion(client, userId), "assertion", {
      assertion_type: "urn:oasis:names:tc:SAML:2.0:assertion",
    });
    await expectInvalidGrant(saml, "assertion_type");
  });
});
