import { createExecutionContext, createScheduledController } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { openDatabase } from "../src/db/client";
import { refreshTokens } from "../src/db/schema";
import worker from "../src/index";
import { SIGN_OUT_CRON } from "../src/jobs/status-sign-outs";
import { newRefreshTokenFamily, ROTATION_GRACE_SECONDS } from "../src/oauth/refresh-tokens";
import {
  openSelfContainedToken,
  selfContainedRefreshToken,
  selfContainedTokenParts,
} from "../src/oauth/self-contained-refresh-tokens";
import { keyRing, protectSecret } from "../src/security/data-protection";
import { BASE, basicAuth, bearer, call, postForm, serverToken, userTokenResponse } from "./helpers/http";
import { createClient, createUser, rowFormGrant } from "./helpers/seed";

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

/** A grant of the grant-row form (issued before tokens carried their grant): its user, family and first token. */
async function rowGranted(client: Awaited<ReturnType<typeof newClient>>) {
  const user = await createUser(nextUser++, { clients: [client.id] });
  const { refreshToken, family } = await rowFormGrant(client.id, Number(user.row.userId));
  return { user, family, tokens: { refresh_token: refreshToken } };
}

afterEach(() => {
  vi.useRealTimers();
});

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
  ])("refuses a user made %s by an import once the sign-out job has run", async (_, status) => {
    const client = await newClient();
    const { user, tokens } = await signedIn(client);
    await createUser(Number(user.row.userId), { ...user.row, status });
    await worker.scheduled(createScheduledController({ scheduledTime: Date.now(), cron: SIGN_OUT_CRON }), env);
    const res = await refresh(client, tokens.refresh_token as string);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      error: "invalid_grant",
      error_description: "The refresh token has been used or revoked",
    });
    await expectRevoked(tokens.access_token as string);
  });

  it("refuses a user blocked through the management API at once", async () => {
    const client = await newClient();
    // Only an account that proved its address may be blocked.
    const user = await createUser(nextUser++, { clients: [client.id], emailVerified: "2024-01-02 00:00:00" });
    const tokens = await userTokenResponse(user, client);
    const admin = await serverToken(await createClient({ admin: true }));
    const blocked = await call(`/api/2/user/${user.row.userId}/status`, {
      method: "POST",
      headers: { ...bearer(admin), "Content-Type": "application/x-www-form-urlencoded" },
      body: "status=blocked",
    });
    expect(blocked.status).toBe(200);
    await expectInvalidGrant(await refresh(client, tokens.refresh_token as string));
  });

  it("refuses a refresh token past its 30 days", async () => {
    const client = await newClient();
    const { tokens } = await signedIn(client);
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 30 * 24 * 3600 * 1000 });
    const res = await refresh(client, tokens.refresh_token as string);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      error: "invalid_grant",
      error_description: "The refresh token has expired",
    });
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
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + ROTATION_GRACE_SECONDS * 1000 });
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
});

describe("grant_type=refresh_token: a rotated token that carries its grant", () => {
  /** A token's generation: its second part. */
  const generationOf = (token: string) => Number(token.split(".")[1]);

  it("carries a generation that each refresh advances: one Durable Object call, no D1 row read or written", async () => {
    const client = await newClient();
    const { tokens } = await signedIn(client);
    const first = tokens.refresh_token as string;
    expect(first.split(".")).toHaveLength(5);
    expect(generationOf(first)).toBe(0);
    const second = await refreshed(client, first);
    expect(generationOf(second.refresh_token)).toBe(1);
    const res = await refresh(client, second.refresh_token);
    expect(res.status).toBe(200);
    expect(generationOf(((await res.json()) as Tokens).refresh_token)).toBe(2);
    const timing = res.headers.get("Server-Timing") ?? "";
    expect(timing).toMatch(/d1;dur=[\d.]+;desc="0 queries, 0 rows read, 0 written"/);
    expect(timing).toMatch(/do;dur=[\d.]+;desc="1 call"/);
  });

  it("keeps its grant's one D1 row as the sign-in wrote it, with no secret of any token", async () => {
    const client = await newClient();
    const { tokens } = await signedIn(client);
    const rows = () =>
      openDatabase(env.DB).select().from(refreshTokens).where(eq(refreshTokens.clientId, client.id)).all();
    const [before] = await rows();
    expect(before).toMatchObject({ tokenHash: expect.stringMatching(/^pt:/), secretHash: null });
    let current = tokens.refresh_token as string;
    for (let i = 0; i < 3; i++) current = (await refreshed(client, current)).refresh_token;
    const after = await rows();
    expect(after).toEqual([before]);
    expect(JSON.stringify(after)).not.toContain(current);
  });

  it("refuses a generation its grant never reached, and an altered one, without ending the grant", async () => {
    const client = await newClient();
    const { tokens } = await signedIn(client);
    const token = tokens.refresh_token as string;
    const parts = token.split(".");
    const grant = await openSelfContainedToken(env, client.id, selfContainedTokenParts(token)!);
    const ahead = await selfContainedRefreshToken(env, client.id, { ...grant!, generation: 5 });
    expect(generationOf(ahead)).toBe(5);
    const altered = [parts[0], "5", ...parts.slice(2)].join(".");
    for (const forged of [ahead, altered]) {
      const res = await refresh(client, forged);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({
        error: "invalid_grant",
        error_description: "The refresh token is invalid",
      });
    }
    expect(generationOf((await refreshed(client, token)).refresh_token)).toBe(1);
  });

  it("advances nothing for a wider scope, or while the signing keys cannot sign", async () => {
    const client = await newClient();
    const { tokens } = await signedIn(client);
    const token = tokens.refresh_token as string;
    const wider = await postForm(
      "/oauth/token",
      { grant_type: "refresh_token", refresh_token: token, scope: "openid" },
      basicAuth(client.id, client.secret),
    );
    expect(wider.status).toBe(400);
    expect(await wider.json()).toMatchObject({ error: "invalid_scope" });
    const request = new Request(`${BASE}/oauth/token`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", ...basicAuth(client.id, client.secret) },
      body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: token }),
    });
    const unsigned = await worker.fetch(request, { ...env, TOKEN_SIGNING_KEYS: "[]" }, createExecutionContext());
    expect(unsigned.status).toBe(503);
    // Still the current token: introspected as live, and rotated to the first generation.
    expect(await introspect(client, token)).toMatchObject({ active: true });
    expect(generationOf((await refreshed(client, token)).refresh_token)).toBe(1);
  });

  it("keeps the window from the rotation of the token presented again, however often it is", async () => {
    const client = await newClient();
    const { tokens } = await signedIn(client);
    const first = tokens.refresh_token as string;
    const start = Date.now();
    await refreshed(client, first);
    vi.useFakeTimers({ toFake: ["Date"], now: start + 20_000 });
    const again = await refreshed(client, first);
    vi.setSystemTime(start + 40_000);
    await expectInvalidGrant(await refresh(client, first));
    await expectRevoked(again.access_token);
  });

  it("rotates many grants of one client at once, each on its own", async () => {
    const client = await newClient();
    const grants = await Promise.all([1, 2, 3, 4, 5, 6].map(() => signedIn(client)));
    const answers = await Promise.all(grants.map(({ tokens }) => refresh(client, tokens.refresh_token as string)));
    expect(answers.map((res) => res.status)).toEqual([200, 200, 200, 200, 200, 200]);
    for (const res of answers) {
      const next = ((await res.json()) as Tokens).refresh_token;
      expect(generationOf(next)).toBe(1);
      expect(await introspect(client, next)).toMatchObject({ active: true });
    }
  });

  it.each([
    ["its generation taken out (a persistent token's form, the same MAC)", (p: string[]) => [p[0], ...p.slice(2)]],
    ["a generation with a leading zero", (p: string[]) => [p[0], "00", ...p.slice(2)]],
    ["a negative generation", (p: string[]) => [p[0], "-1", ...p.slice(2)]],
    ["a generation of 16 digits", (p: string[]) => [p[0], "1".repeat(16), ...p.slice(2)]],
  ])("refuses a token with %s, ending nothing", async (_, alter) => {
    const client = await newClient();
    const { tokens } = await signedIn(client);
    const token = tokens.refresh_token as string;
    const altered = alter(token.split(".")).join(".");
    // Not even read as a token of this form, but the one without a generation, whose MAC fails.
    if (altered.split(".").length === 5) expect(selfContainedTokenParts(altered)).toBeNull();
    const res = await refresh(client, altered);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      error: "invalid_grant",
      error_description: "The refresh token is invalid",
    });
    expect((await refresh(client, token)).status).toBe(200);
  });
});

describe.each([
  ["a self-contained token", signedIn],
  ["a grant-row token", rowGranted],
])("grant_type=refresh_token, %s: reuse and retries", (_, granted) => {
  it("finds an earlier token as reuse however many rotations a thief has made since", async () => {
    const client = await newClient();
    const { tokens } = await granted(client);
    const stolen = tokens.refresh_token as string;
    let thief = stolen;
    let last: Tokens | undefined;
    for (let i = 0; i < 25; i++) {
      last = await refreshed(client, thief);
      thief = last.refresh_token;
    }
    // The owner comes back with the token the thief took: not the one that made the current
    // token, so reuse even within the window.
    await expectInvalidGrant(await refresh(client, stolen));
    await expectRevoked(last!.access_token);
    await expectInvalidGrant(await refresh(client, thief));
  });

  it("answers every retry within the window while the current token is unused, however many", async () => {
    const client = await newClient();
    const { tokens } = await granted(client);
    const first = tokens.refresh_token as string;
    const answers: Tokens[] = [];
    for (let i = 0; i < 12; i++) answers.push(await refreshed(client, first));
    // Only the last answer's token is live; an earlier one presented is reuse.
    expect(await introspect(client, answers.at(-1)!.refresh_token)).toMatchObject({ active: true });
    await expectInvalidGrant(await refresh(client, answers[0]!.refresh_token));
    await expectRevoked(answers.at(-1)!.access_token);
  });
});

describe("grant_type=refresh_token: a grant rotated in its row (tokens issued before they carried their grant)", () => {
  /** The client's one grant row (each test's client has one). */
  async function grantRow(client: { id: string }) {
    const rows = await openDatabase(env.DB)
      .select()
      .from(refreshTokens)
      .where(eq(refreshTokens.clientId, client.id))
      .all();
    expect(rows).toHaveLength(1);
    return rows[0]!;
  }

  it("keeps one row per grant, whose current token's hash is replaced, whatever the number of rotations", async () => {
    const client = await newClient();
    const { tokens } = await rowGranted(client);
    let current = tokens.refresh_token as string;
    for (let i = 0; i < 3; i++) current = (await refreshed(client, current)).refresh_token;
    const row = await grantRow(client);
    expect(row.tokenHash).toBe(`rt:${current.slice(0, current.indexOf("."))}`);
    expect(row.secretHash).toBe(await protectSecret(keyRing(env), current));
    expect(JSON.stringify(row)).not.toContain(current);
  });

  it("revokes nothing for a token that names no grant's locator: no one who saw an access token ends its grant", async () => {
    const client = await newClient();
    const { tokens, family } = await rowGranted(client);
    const real = tokens.refresh_token as string;
    // The access tokens' `gid` is the family, which no refresh token carries.
    expect(real.startsWith(family)).toBe(false);
    for (const forged of [`${family}.${"A".repeat(43)}`, `${"B".repeat(22)}.${"A".repeat(43)}`]) {
      await expectInvalidGrant(await refresh(client, forged));
      const revoked = await postForm("/oauth/revoke", { token: forged }, basicAuth(client.id, client.secret));
      expect(revoked.status).toBe(200);
    }
    const next = await refreshed(client, real);
    expect(await introspect(client, next.refresh_token)).toMatchObject({ active: true });
    // An earlier token of the grant is no longer live, and revokes the grant when revoked.
    expect(await introspect(client, real)).toEqual({ active: false });
    expect((await postForm("/oauth/revoke", { token: real }, basicAuth(client.id, client.secret))).status).toBe(200);
    await expectInvalidGrant(await refresh(client, next.refresh_token));
  });

  it("refuses another client's earlier token without revoking the grant", async () => {
    const client = await newClient();
    const other = await newClient();
    const { tokens } = await rowGranted(client);
    const first = tokens.refresh_token as string;
    const second = await refreshed(client, first);
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + ROTATION_GRACE_SECONDS * 1000 });
    await expectInvalidGrant(await refresh(other, first));
    expect((await refresh(client, second.refresh_token)).status).toBe(200);
  });

  it("refuses a scope wider than the grant's before anything is written", async () => {
    const client = await newClient();
    const { tokens } = await rowGranted(client);
    const before = await grantRow(client);
    const res = await postForm(
      "/oauth/token",
      { grant_type: "refresh_token", refresh_token: tokens.refresh_token as string, scope: "openid" },
      basicAuth(client.id, client.secret),
    );
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: "invalid_scope" });
    expect(await grantRow(client)).toEqual(before);
  });

  it("refuses, without revoking, an earlier token once the current one's key is no longer read", async () => {
    const client = await newClient();
    const { tokens } = await rowGranted(client);
    const first = tokens.refresh_token as string;
    await refreshed(client, first);
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + ROTATION_GRACE_SECONDS * 1000 });
    const row = await grantRow(client);
    // As if the current token's hash were under a key since retired.
    const retired = `${"z".repeat(11)}.${row.secretHash!.slice(row.secretHash!.indexOf(".") + 1)}`;
    await openDatabase(env.DB).update(refreshTokens).set({ secretHash: retired }).where(eq(refreshTokens.id, row.id));
    await expectInvalidGrant(await refresh(client, first));
    expect((await grantRow(client)).revoked).toBeNull();
  });

  it("refuses, without revoking, a retry within the window whose rotation's hash is under a key no longer read", async () => {
    const client = await newClient();
    const { tokens } = await rowGranted(client);
    const first = tokens.refresh_token as string;
    await refreshed(client, first);
    const row = await grantRow(client);
    // As if the rotation had been made by an isolate that read a key this one no longer does.
    const retired = `${"z".repeat(11)}.${row.rotatedFrom!.slice(row.rotatedFrom!.indexOf(".") + 1)}`;
    await openDatabase(env.DB).update(refreshTokens).set({ rotatedFrom: retired }).where(eq(refreshTokens.id, row.id));
    await expectInvalidGrant(await refresh(client, first));
    expect((await grantRow(client)).revoked).toBeNull();
  });

  it("answers nothing, and writes nothing, while the signing keys cannot sign", async () => {
    const client = await newClient();
    const { tokens } = await rowGranted(client);
    const before = await grantRow(client);
    const request = new Request(`${BASE}/oauth/token`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", ...basicAuth(client.id, client.secret) },
      body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: tokens.refresh_token as string }),
    });
    const res = await worker.fetch(request, { ...env, TOKEN_SIGNING_KEYS: "[]" }, createExecutionContext());
    expect(res.status).toBe(503);
    expect(await grantRow(client)).toEqual(before);
    expect((await refresh(client, tokens.refresh_token as string)).status).toBe(200);
  });

  it.each([
    ["inactive", -1],
    ["blocked", -2],
    ["deleted", -3],
  ])("refuses a user who has become %s, read at each refresh", async (_, status) => {
    const client = await newClient();
    const { user, tokens } = await rowGranted(client);
    await createUser(Number(user.row.userId), { ...user.row, status });
    const res = await refresh(client, tokens.refresh_token);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      error: "invalid_grant",
      error_description: expect.stringContaining("account"),
    });
  });

  it("refuses a user who has been blocked since the rotation, within the window", async () => {
    const client = await newClient();
    const { user, tokens } = await rowGranted(client);
    await refreshed(client, tokens.refresh_token);
    await createUser(Number(user.row.userId), { ...user.row, status: -2 });
    const res = await refresh(client, tokens.refresh_token);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      error: "invalid_grant",
      error_description: "The user account is blocked",
    });
  });

  it("refuses a refresh token past its 30 days", async () => {
    const client = await newClient();
    const { tokens } = await rowGranted(client);
    const row = await grantRow(client);
    expect(row.expires - row.created).toBe(30 * 24 * 3600);
    await openDatabase(env.DB)
      .update(refreshTokens)
      .set({ expires: Math.floor(Date.now() / 1000) - 1 })
      .where(eq(refreshTokens.id, row.id));
    await expectInvalidGrant(await refresh(client, tokens.refresh_token));
  });
});

describe("grant_type=refresh_token: a token of the earlier form (a row each)", () => {
  /** A refresh token as issued before rotation in place: a secret alone, its own row. */
  async function earlierToken(client: Awaited<ReturnType<typeof newClient>>) {
    const { user } = await signedIn(client);
    const token = crypto.randomUUID().replace(/-/g, "") + "abcdefghijk";
    const now = Math.floor(Date.now() / 1000);
    await openDatabase(env.DB)
      .insert(refreshTokens)
      .values({
        tokenHash: await protectSecret(keyRing(env), token),
        clientId: client.id,
        userId: Number(user.row.userId),
        family: newRefreshTokenFamily(),
        created: now,
        expires: now + 3600,
      });
    return token;
  }

  it("rotates into a token of the new form, answers again within the window, and finds reuse after it", async () => {
    const client = await newClient();
    const earlier = await earlierToken(client);
    const first = await refreshed(client, earlier);
    expect(first.refresh_token).toMatch(/^[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/);
    const again = await refreshed(client, earlier);
    expect(await introspect(client, first.refresh_token)).toEqual({ active: false });
    const next = await refreshed(client, again.refresh_token);
    // Its successor has been used: the earlier token presented again is reuse.
    await expectInvalidGrant(await refresh(client, earlier));
    await expectRevoked(next.access_token);
  });

  it("is introspected and revoked as before", async () => {
    const client = await newClient();
    const earlier = await earlierToken(client);
    expect(await introspect(client, earlier)).toMatchObject({ active: true, token_use: "refresh" });
    expect((await postForm("/oauth/revoke", { token: earlier }, basicAuth(client.id, client.secret))).status).toBe(200);
    await expectInvalidGrant(await refresh(client, earlier));
  });
});
