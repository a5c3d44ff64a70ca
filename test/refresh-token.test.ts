import { env } from "cloudflare:workers";
import { eq, inArray } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../src/db/client";
import { refreshTokens } from "../src/db/schema";
import { refreshTokenForms, ROTATION_GRACE_SECONDS } from "../src/oauth/refresh-tokens";
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

type Tokens = { access_token: string; refresh_token: string };

async function refreshed(client: { id: string; secret: string }, refreshToken: string): Promise<Tokens> {
  const res = await refresh(client, refreshToken);
  expect(res.status).toBe(200);
  return (await res.json()) as Tokens;
}

async function introspect(client: { id: string; secret: string }, token: string) {
  const res = await postForm("/oauth/introspect", { token }, basicAuth(client.id, client.secret));
  return (await res.json()) as { active: boolean };
}

/** An access token of a revoked family: the API refuses it. */
async function expectRevoked(accessToken: string) {
  const me = await call("/api/2/me", { headers: bearer(accessToken) });
  expect(me.status).toBe(401);
  await me.body?.cancel();
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

  it("rotates: once the successor is used, presenting the old token again revokes the whole family", async () => {
    const client = await newClient();
    const { tokens } = await signedIn(client);
    const first = tokens.refresh_token as string;
    const second = await refreshed(client, first);
    const third = await refreshed(client, second.refresh_token);
    await expectInvalidGrant(await refresh(client, first));
    // The family is revoked: the live token and the access tokens issued under it stop working.
    await expectInvalidGrant(await refresh(client, third.refresh_token));
    await expectRevoked(third.access_token);
  });

  it("answers every one of racing redemptions, leaving exactly one of their successors live", async () => {
    const client = await newClient();
    const { tokens } = await signedIn(client);
    const results = await Promise.all([1, 2, 3].map(() => refresh(client, tokens.refresh_token as string)));
    // A client retrying while its first request is still under way: the first rotation to land
    // wins, each later one replaces the successor before it (the grace window), the last one wins.
    expect(results.map((res) => res.status)).toEqual([200, 200, 200]);
    const answered = await Promise.all(results.map(async (res) => ((await res.json()) as Tokens).refresh_token));
    const live = [];
    for (const token of answered) if ((await introspect(client, token)).active) live.push(token);
    expect(live).toHaveLength(1);
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

describe("grant_type=refresh_token: the grace window", () => {
  it("answers a token rotated moments ago again while its successor is unused, and that successor dies", async () => {
    const client = await newClient();
    const { tokens } = await signedIn(client);
    const first = tokens.refresh_token as string;
    const lost = await refreshed(client, first);
    const again = await refreshed(client, first);
    expect(again.refresh_token).not.toBe(lost.refresh_token);
    expect(await introspect(client, lost.refresh_token)).toEqual({ active: false });
    const next = await refreshed(client, again.refresh_token);
    const me = await call("/api/2/me", { headers: bearer(next.access_token) });
    expect(me.status).toBe(200);
  });

  it("revokes the family when a replaced successor is presented: a thief within the window is found", async () => {
    const client = await newClient();
    const { tokens } = await signedIn(client);
    const stolen = tokens.refresh_token as string;
    const owner = await refreshed(client, stolen);
    const thief = await refreshed(client, stolen);
    await expectInvalidGrant(await refresh(client, owner.refresh_token));
    await expectInvalidGrant(await refresh(client, thief.refresh_token));
    await expectRevoked(thief.access_token);
  });

  it("revokes the family for a token presented again once the window has passed", async () => {
    const client = await newClient();
    const { tokens } = await signedIn(client);
    const first = tokens.refresh_token as string;
    const second = await refreshed(client, first);
    const windowAgo = Math.floor(Date.now() / 1000) - ROTATION_GRACE_SECONDS;
    await openDatabase(env.DB)
      .update(refreshTokens)
      .set({ revoked: windowAgo, rotated: windowAgo })
      .where(inArray(refreshTokens.tokenHash, await refreshTokenForms(env, first)));
    await expectInvalidGrant(await refresh(client, first));
    await expectInvalidGrant(await refresh(client, second.refresh_token));
    await expectRevoked(second.access_token);
  });

  it("answers nothing for a token whose family was revoked since it was rotated", async () => {
    const client = await newClient();
    const { tokens } = await signedIn(client);
    const first = tokens.refresh_token as string;
    const second = await refreshed(client, first);
    const revoked = await postForm(
      "/oauth/revoke",
      { token: second.refresh_token },
      basicAuth(client.id, client.secret),
    );
    expect(revoked.status).toBe(200);
    await expectInvalidGrant(await refresh(client, first));
  });

  it("refuses a user who has been blocked since the rotation", async () => {
    const client = await newClient();
    const { user, tokens } = await signedIn(client);
    await refreshed(client, tokens.refresh_token as string);
    await createUser(Number(user.row.userId), { ...user.row, status: -2 });
    const res = await refresh(client, tokens.refresh_token as string);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      error: "invalid_grant",
      error_description: "The user account is blocked",
    });
  });
});
