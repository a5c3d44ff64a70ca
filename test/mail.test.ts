import { describe, expect, it } from "vitest";
import { bearer, call, type Container, container, ingrid, serverToken, userToken, webClient } from "./helpers/http";
import { createClient, createUser, importData } from "./helpers/seed";

const base64 = (text: string) => btoa(String.fromCharCode(...new TextEncoder().encode(text)));
const base64url = (text: string) => base64(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

async function mail(query: string, token?: string): Promise<{ res: Response; body: Container }> {
  const res = await call(`/api/2/mail${query}`, { headers: bearer(token ?? (await serverToken(webClient))) });
  return { res, body: await container(res) };
}

const welcome = {
  template: "welcome",
  senderName: "Nordic Daily",
  senderEmail: "no-reply@nordicdaily.example",
  userName: "Ingrid Hansen",
  userEmail: "ingrid.hansen@example.org",
  created: 1709284500,
  token: "a9f3c1",
  events: [{ event: "sent", timestamp: 1709284501 }],
};

describe("GET /api/2/mail", () => {
  it.each([
    ["the userId", "?id=1001"],
    ["the uuid, in any case", `?id=${ingrid.uuid.toUpperCase()}`],
    ["the primary e-mail in Base64", `?email=${base64("ingrid.hansen@example.org")}`],
    ["a secondary e-mail in unpadded Base64 URL", `?email=${base64url("Ingrid@Work.example")}`],
    ["id and email of the same user", `?id=1001&email=${base64("ingrid@work.example")}`],
  ])("finds a user's mail with its events by %s", async (_, query) => {
    const { res, body } = await mail(query);
    expect(res.status).toBe(200);
    expect(body).toMatchObject({ object: "Mails", type: "collection", meta: { count: 1, offset: 0 } });
    expect(body.data).toEqual([welcome]);
  });

  it("lists the newest mail first, each with its own events in time order", async () => {
    const user = await createUser(9401);
    const sent = (token: string, created: number, events: number[]) => ({
      userId: 9401,
      clientId: webClient.id,
      template: "receipt",
      senderEmail: "shop@nordicdaily.example",
      userEmail: user.email,
      created,
      token,
      events: events.map((timestamp, i) => ({ event: i === 0 ? "sent" : "opened", timestamp })),
    });
    await importData({
      mails: [sent("m9401a", 1000, [1001]), sent("m9401b", 3000, [3005, 3001]), sent("m9401c", 2000, [])],
    });
    const { body } = await mail("?id=9401");
    expect(body.data.map((m: { token: string }) => m.token)).toEqual(["m9401b", "m9401c", "m9401a"]);
    expect(body.data[0].events).toEqual([
      { event: "opened", timestamp: 3001 },
      { event: "sent", timestamp: 3005 },
    ]);
    expect(body.data[1].events).toEqual([]);
  });

  it.each([
    ["no parameter", ""],
    ["an id that is neither a uuid nor a userId", "?id=abc"],
    ["the deprecated legacy id", `?id=${ingrid.id}`],
    ["an unreadable id beside a good e-mail", `?id=abc&email=${base64("ingrid.hansen@example.org")}`],
    ["a repeated id", "?id=1001&id=1002"],
    ["a repeated email", `?email=${base64("ingrid.hansen@example.org")}&email=${base64("ingrid@work.example")}`],
  ])("answers 400 No valid parameter provided for %s", async (_, query) => {
    const { res, body } = await mail(query);
    expect(res.status).toBe(400);
    expect(body.error).toMatchObject({ error: "invalid_request", error_description: "No valid parameter provided" });
  });

  it.each([
    ["text that is not Base64", "?email=not%20base64!"],
    ["Base64 of something that is no e-mail", `?email=${base64("not an e-mail")}`],
    ["Base64 of invalid UTF-8", `?email=${btoa("\xff\xfe@x.example")}`],
  ])("answers 400 for an email parameter of %s", async (_, query) => {
    const { res, body } = await mail(query);
    expect(res.status).toBe(400);
    expect(body.error!.error_description).toBe("Email parameter did not properly base64 decode into a valid email");
  });
});

/** Users of their own, away from the other files' ranges (the test files share one database). */
const ownUser = 27_000 + Math.floor(Math.random() * 500) * 2;

describe("mail is shown only to the client it was sent for", () => {
  it("shows a user's mail of the calling client only: not another client's, not one sent for none", async () => {
    const other = await createClient();
    const userId = ownUser;
    await createUser(userId, { clients: [webClient.id, other.id] });
    const sentFor = (clientId: string | undefined, token: string) => ({
      userId,
      ...(clientId && { clientId }),
      template: "receipt",
      senderEmail: "shop@nordicdaily.example",
      userEmail: `user${userId}@example.org`,
      created: 1000,
      token,
    });
    await importData({
      mails: [
        sentFor(webClient.id, `m${userId}-web`),
        sentFor(other.id, `m${userId}-other`),
        sentFor(undefined, `m${userId}-none`),
      ],
    });
    const tokens = async (token?: string) =>
      (await mail(`?id=${userId}`, token)).body.data.map((m: { token: string }) => m.token);
    expect(await tokens()).toEqual([`m${userId}-web`]);
    expect(await tokens(await serverToken(other))).toEqual([`m${userId}-other`]);
  });

  it("records a sign-in link's mail for the client that asked for it", async () => {
    const other = await createClient();
    const userId = ownUser + 1;
    const user = await createUser(userId, { clients: [webClient.id, other.id] });
    const asked = await call("/api/2/signin", {
      method: "POST",
      headers: { ...bearer(await serverToken(webClient)), "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ identifier: user.email, redirectUri: webClient.redirectUris[0]! }).toString(),
    });
    expect(asked.status).toBe(201);
    expect((await mail(`?id=${userId}`)).body.data.map((m: { template: string }) => m.template)).toEqual(["signin"]);
    expect((await mail(`?id=${userId}`, await serverToken(other))).body.data).toEqual([]);
  });
});

describe("mail is shown only for users of the calling client", () => {
  it("shows nothing for a user of another merchant, or one not connected to the client", async () => {
    const otherMerchant = await createClient({ merchantId: 20 });
    expect((await mail("?id=1001", await serverToken(otherMerchant))).body.data).toEqual([]);
    const sameMerchant = await createClient();
    const { res, body } = await mail(`?email=${base64("ingrid.hansen@example.org")}`, await serverToken(sameMerchant));
    expect(res.status).toBe(200);
    expect(body.data).toEqual([]);
  });

  it("answers an unknown user exactly as an invisible one", async () => {
    const { res, body } = await mail("?id=99999999");
    expect(res.status).toBe(200);
    expect(body.data).toEqual([]);
  });

  it("needs a server token", async () => {
    const { res } = await mail("?id=1001", await userToken());
    expect(res.status).toBe(403);
  });
});
