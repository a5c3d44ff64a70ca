/**
 * The retention job (jobs/retention.ts), run as the Cron Trigger runs it: through the Worker's
 * scheduled handler, on real local D1. What has expired goes; what may still be needed stays.
 * The database is shared with the other test files, so only this test's own rows are looked at.
 */
import { createScheduledController } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq, inArray } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { openDatabase } from "../src/db/client";
import {
  auditEvents,
  idempotencyKeys,
  phoneVerifications,
  refreshTokens,
  sessions,
  signinRequests,
} from "../src/db/schema";
import worker from "../src/index";
import { AUDIT_RETENTION_SECONDS } from "../src/jobs/retention";
import { bearer, call, container, serverToken } from "./helpers/http";
import { createClient, createUser } from "./helpers/seed";

const DAY = 24 * 3600;
const db = openDatabase(env.DB);

function runJob() {
  return worker.scheduled(createScheduledController({ scheduledTime: Date.now(), cron: "17 * * * *" }), env);
}

afterEach(() => vi.restoreAllMocks());

describe("the retention job", () => {
  it("purges expired refresh tokens, sessions, sign-in link rows and old audit entries, and keeps the rest", async () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    const now = Math.floor(Date.now() / 1000);
    // A client whose access tokens live a day, and one whose live a year.
    const daily = await createClient({ accessTokenLifetime: DAY });
    const yearly = await createClient({ accessTokenLifetime: 365 * DAY });
    const userId = 29_000 + Math.floor(Math.random() * 900);
    await createUser(userId, { clients: [daily.id, yearly.id] });
    const token = (name: string, clientId: string, created: number, expires: number) => ({
      tokenHash: `${name}-${crypto.randomUUID()}`,
      clientId,
      userId,
      family: name,
      created,
      expires,
    });
    const persistent = (name: string, clientId: string, created: number, expires: number) => ({
      ...token(name, clientId, created, expires),
      tokenHash: `pt:${crypto.randomUUID()}`,
    });
    const tokens = {
      expired: token("expired", daily.id, now - 40 * DAY, now - 10 * DAY),
      accessStillLive: token("access-live", yearly.id, now - 40 * DAY, now - 10 * DAY),
      live: token("live", daily.id, now - DAY, now + 29 * DAY),
      // Persistent grants (`pt:`): written at the sign-in, issuing access tokens until their end.
      persistentLive: persistent("persistent-live", daily.id, now - 40 * DAY, now + 325 * DAY),
      persistentEnded: persistent("persistent-ended", daily.id, now - 375 * DAY, now - 10 * DAY),
      persistentAccessLive: persistent("persistent-access-live", yearly.id, now - 375 * DAY, now - 10 * DAY),
    };
    await db.insert(refreshTokens).values(Object.values(tokens));
    const KEPT = ["access-live", "live", "persistent-access-live", "persistent-live"];
    const session = (name: string, expires: number) => ({
      idHash: `${name}-${crypto.randomUUID()}`,
      userId,
      clientId: daily.id,
      created: expires - DAY,
      expires,
    });
    const browserSessions = { ended: session("ended", now - 60), live: session("live", now + DAY) };
    await db.insert(sessions).values(Object.values(browserSessions));
    const links = {
      long: {
        subject: `email:long-${userId}@example.org`,
        tokenHash: "a",
        created: now - DAY,
        expires: now - DAY + 300,
      },
      recent: { subject: `email:recent-${userId}@example.org`, tokenHash: "b", created: now - 400, expires: now - 100 },
    };
    await db.insert(signinRequests).values(Object.values(links));
    const entry = (at: number) => ({
      at,
      merchantId: 10,
      clientId: daily.id,
      actor: "client" as const,
      action: "retention.test",
      userId,
    });
    await db.insert(auditEvents).values([entry(now - AUDIT_RETENTION_SECONDS - DAY), entry(now - DAY)]);
    const key = (name: string, created: number) => ({
      clientId: daily.id,
      key: name,
      requestHash: "h",
      resource: "user:x",
      created,
    });
    await db.insert(idempotencyKeys).values([key("old", now - 2 * DAY), key("recent", now - 3600)]);

    await runJob();

    const families = await db
      .select({ family: refreshTokens.family })
      .from(refreshTokens)
      .where(eq(refreshTokens.userId, userId));
    expect(families.map((row) => row.family).sort()).toEqual(KEPT);
    const left = await db.select({ idHash: sessions.idHash }).from(sessions).where(eq(sessions.userId, userId));
    expect(left).toEqual([{ idHash: browserSessions.live.idHash }]);
    const linkRows = await db
      .select({ subject: signinRequests.subject })
      .from(signinRequests)
      .where(inArray(signinRequests.subject, [links.long.subject, links.recent.subject]));
    expect(linkRows).toEqual([{ subject: links.recent.subject }]);
    const entries = await db.select({ at: auditEvents.at }).from(auditEvents).where(eq(auditEvents.userId, userId));
    expect(entries).toEqual([{ at: now - DAY }]);
    const keys = await db
      .select({ key: idempotencyKeys.key })
      .from(idempotencyKeys)
      .where(eq(idempotencyKeys.clientId, daily.id));
    expect(keys).toEqual([{ key: "recent" }]);

    // Run again: what is kept stays kept.
    await runJob();
    const again = await db
      .select({ family: refreshTokens.family })
      .from(refreshTokens)
      .where(eq(refreshTokens.userId, userId));
    expect(again.map((row) => row.family).sort()).toEqual(KEPT);
    expect(log.mock.calls.join("\n")).toMatch(/retention: purged .*"sessions":\d+/);
  });

  it("purges phone number changes whose code has expired, and keeps a live one", async () => {
    vi.spyOn(console, "log").mockImplementation(() => {});
    const now = Math.floor(Date.now() / 1000);
    const first = 29_950 + Math.floor(Math.random() * 20) * 2;
    await createUser(first);
    await createUser(first + 1);
    const change = (userId: number, expires: number) => ({
      userId,
      clientId: "phone-test",
      merchantId: 10,
      phoneNumber: "+4790000000",
      codeHash: "x",
      created: expires - 600,
      expires,
    });
    await db.insert(phoneVerifications).values([change(first, now - 1), change(first + 1, now + 300)]);
    await runJob();
    const left = await db
      .select({ userId: phoneVerifications.userId })
      .from(phoneVerifications)
      .where(inArray(phoneVerifications.userId, [first, first + 1]));
    expect(left).toEqual([{ userId: first + 1 }]);
  });

  it("copies the parts of a user from before migration 0031 into the user's row; the user reads the same meanwhile", async () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    const userId = 29_990 + Math.floor(Math.random() * 9);
    await createUser(userId, {
      emails: [{ value: `second${userId}@example.org`, type: "work" }],
      phoneNumber: "+4791234567",
      addresses: { home: { streetAddress: "Storgata 1", postalCode: "0155", locality: "Oslo", country: "NO" } },
    });
    const token = await serverToken();
    const read = async (bookmark?: string) => {
      const res = await call(`/api/2/user/${userId}`, {
        headers: { ...bearer(token), ...(bookmark && { "x-d1-bookmark": bookmark }) },
      });
      expect(res.status).toBe(200);
      return { bookmark: res.headers.get("x-d1-bookmark")!, user: (await container(res)).data };
    };
    const first = await read();
    const partsOf = async () =>
      (await env.DB.prepare("SELECT parts FROM users WHERE id = ?").bind(userId).first<{ parts: string | null }>())!
        .parts;
    const copied = await partsOf();
    expect(JSON.parse(copied!)).toMatchObject({ emails: [{}, {}], phoneNumbers: [{}], addresses: [{}] });

    // As a user imported before the migration is: no copy.
    await env.DB.prepare("UPDATE users SET parts = NULL WHERE id = ?").bind(userId).run();
    expect((await read(first.bookmark)).user).toEqual(first.user);

    await runJob();
    expect(log.mock.calls.join("\n")).toMatch(/"userPartsCopied":[1-9]/);
    expect(await partsOf()).toBe(copied);
    expect((await read(first.bookmark)).user).toEqual(first.user);
  });
});
