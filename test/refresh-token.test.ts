import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../src/db/client";
import { refreshTokens } from "../src/db/schema";
import { basicAuth, bearer, call, postForm, userTokenResponse } from "./helpers/http";
import { createClient, createUser } from "./helpers/seed";

const REDIRECT = "https://test.example/callback";

async function newClient(grantTypes = ["password", "refresh_token"]) {
  const client = await createClient({ grantTypes, autoApprove: true });
  return { ...client, redirectUris: [REDIRECT] };
}

function refresh(client: { id: string; secret: string }, refreshToken: string) {
  return postForm(
    "/oauth/token",
    { grant_type: "refresh_token", refresh_token: refreshToken },
    basicAuth(client.id, client.secret),
  );
}

async function expectInvalidGrant(res: Response) {
  expect(res.status).toBe(400);
  expect(await res.json()).toMatchObject({ error: "invalid_grant", error_code: 400 });
}

let nextUser = 9_600 + Math.floor(Math.random() * 50) * 10;
async function signedIn(client: Awaited<ReturnType<typeof newClient>>) {
  const user = await createUser(nextUser++, { clients: [client.id] });
  return { user, tokens: await userTokenResponse(user, client) };
}

describe("grant_type=refresh_token", () => {
  it("answers a new access token and a new refresh token for the same user", async () => {
    const client = await newClient();
    const { user, tokens } = await signedIn(client);
    const res = await refresh(client, tokens.refresh_token as string);
    expect(res.status).toBe(200);
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ token_type: "Bearer", user_id: user.row.userId, is_admin: false });
    expect(body.refresh_token).toEqual(expect.any(String));
    expect(body.refresh_token).not.toBe(tokens.refresh_token);
    const me = await call("/api/2/me", { headers: bearer(body.access_token as string) });
    expect(me.status).toBe(200);
  });

  it("rotates: the used token stops working, and using it again revokes the whole family", async () => {
    const client = await newClient();
    const { tokens } = await signedIn(client);
    const first = tokens.refresh_token as string;
    const second = ((await (await refresh(client, first)).json()) as { refresh_token: string }).refresh_token;
    await expectInvalidGrant(await refresh(client, first));
    // The successor was issued from a token presented twice: it is revoked too.
    await expectInvalidGrant(await refresh(client, second));
  });

  it("lets only one of two racing redemptions win, and then revokes the family", async () => {
    const client = await newClient();
    const { tokens } = await signedIn(client);
    const results = await Promise.all([1, 2, 3].map(() => refresh(client, tokens.refresh_token as string)));
    const winners = results.filter((res) => res.status === 200);
    expect(winners).toHaveLength(1);
    for (const loser of results.filter((res) => res.status !== 200)) await expectInvalidGrant(loser);
    const successor = ((await winners[0]!.json()) as { refresh_token: string }).refresh_token;
    await expectInvalidGrant(await refresh(client, successor));
  });

  it("refuses another client's refresh token, without revoking it", async () => {
    const client = await newClient();
    const other = await newClient();
    const { tokens } = await signedIn(client);
    await expectInvalidGrant(await refresh(other, tokens.refresh_token as string));
    expect((await refresh(client, tokens.refresh_token as string)).status).toBe(200);
  });

  it.each([
    ["inactive", -1],
    ["blocked", -2],
    ["deleted", -3],
  ])("refuses a user who has become %s", async (_, status) => {
    const client = await newClient();
    const { user, tokens } = await signedIn(client);
    await createUser(Number(user.row.userId), { ...user.row, status });
    const res = await refresh(client, tokens.refresh_token as string);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      error: "invalid_grant",
      error_description: expect.stringContaining("account"),
    });
  });

  it("refuses a refresh token past its 30 days", async () => {
    const client = await newClient();
    const { tokens } = await signedIn(client);
    const db = openDatabase(env.DB);
    const [row] = await db.select().from(refreshTokens).where(eq(refreshTokens.clientId, client.id)).all();
    expect(row!.expires - row!.created).toBe(30 * 24 * 3600);
    await db
      .update(refreshTokens)
      .set({ expires: Math.floor(Date.now() / 1000) - 1 })
      .where(eq(refreshTokens.id, row!.id));
    await expectInvalidGrant(await refresh(client, tokens.refresh_token as string));
  });

  it.each([
    ["an unknown token", { refresh_token: "not-a-token-we-issued" }, "invalid_grant"],
    ["no token", {}, "invalid_request"],
  ])("refuses %s", async (_, fields, error) => {
    const client = await newClient();
    const res = await postForm(
      "/oauth/token",
      { grant_type: "refresh_token", ...fields },
      basicAuth(client.id, client.secret),
    );
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error });
  });

  it("is refused to a client not allowed the grant", async () => {
    const client = await newClient(["password"]);
    const { tokens } = await signedIn(client);
    const res = await refresh(client, tokens.refresh_token as string);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: "unauthorized_client" });
  });

  it("is listed by the status endpoint", async () => {
    const body = (await (await call("/api/2/status")).json()) as { data: { oauth: { grantTypes: string } } };
    expect(body.data.oauth.grantTypes.split("|")).toContain("refresh_token");
  });
});
