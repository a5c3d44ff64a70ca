import { beforeAll, describe, expect, it } from "vitest";
import { DIGITAL_CONTENT_FIELDS } from "../src/schemas/responses/digital-content";
import { bearer, call, type Container, container, serverToken, userToken, webClient } from "./helpers/http";
import { createClient, createUser, importData } from "./helpers/seed";

const DAY = 86_400;
const now = Math.floor(Date.now() / 1000);

let client: { id: string; secret: string };
let token: string;
let base: number;
let users: [number, number];

beforeAll(async () => {
  client = await createClient();
  token = await serverToken(client);
  base = 700_000 + Math.floor(Math.random() * 1000) * 100;
  users = [base + 91, base + 92];
  for (const userId of users) await createUser(userId, { clients: [client.id] });
  const product = (id: number, parentProductId?: number) => ({
    productId: id,
    parentProductId,
    clientId: client.id,
    type: 1,
    name: `Content ${id}`,
    price: 100,
    vat: 2500,
    currency: "NOK",
    status: 3,
    created: now - 40 * DAY,
  });
  const item = (id: number, productId: number, parentProductId: number | undefined, userId: number, extra = {}) => ({
    userProductId: id,
    productId,
    parentProductId,
    userId,
    clientId: client.id,
    status: 3,
    created: now - 10 * DAY,
    updated: now - 10 * DAY,
    ...extra,
  });
  await importData({
    version: 2,
    products: [product(base + 50), product(base + 51, base + 50), product(base + 52)],
    digitalContents: [
      item(base + 1, base + 50, undefined, users[0], { orderId: 77, count: 2, statusMsg: "Paid" }),
      item(base + 2, base + 51, base + 50, users[0], { status: 0, created: now - 30 * DAY }),
      item(base + 3, base + 52, undefined, users[1], { status: -1, updated: now - DAY }),
      item(base + 4, base + 52, undefined, users[1], { status: -2 }),
      item(base + 5, base + 51, base + 50, users[1], { created: now - 2 * DAY }),
    ],
  });
});

async function list(query: string, bearerToken = token): Promise<{ res: Response; body: Container }> {
  const res = await call(`/api/2/digitalcontents${query}`, { headers: bearer(bearerToken) });
  return { res, body: await container(res) };
}

const ids = (body: Container) => (body.data as { userProductId: string }[]).map((d) => Number(d.userProductId) - base);

describe("GET /api/2/digitalcontents", () => {
  it("lists the client's digital contents, every integer as a string", async () => {
    const { res, body } = await list(`?productId=${base + 50}`);
    expect(res.status).toBe(200);
    expect(body).toMatchObject({ object: "DigitalContents", type: "collection", meta: { count: 1, offset: 0 } });
    const [first] = body.data;
    expect(Object.keys(first).sort()).toEqual([...DIGITAL_CONTENT_FIELDS].sort());
    expect(first).toEqual({
      userProductId: String(base + 1),
      productId: String(base + 50),
      parentProductId: null,
      clientId: client.id,
      userId: String(users[0]),
      orderId: "77",
      status: "3",
      count: "2",
      updated: expect.stringMatching(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/),
      created: expect.stringMatching(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/),
      bundleId: null,
      statusMsg: "Paid",
    });
  });

  it("leaves deleted and blocked items out unless all (or none) is asked for", async () => {
    expect(ids((await list("")).body)).toEqual([1, 2, 5]);
    expect(ids((await list("?filters=all")).body)).toEqual([1, 2, 3, 4, 5]);
    expect(ids((await list("?filters=none")).body)).toEqual([1, 2, 3, 4, 5]);
    expect(ids((await list("?filters=active")).body)).toEqual([1, 5]);
    expect(ids((await list("?filters=expired")).body)).toEqual([2]);
    expect(ids((await list("?filters=active,expired")).body)).toEqual([1, 2, 5]);
  });

  it("selects by status, userId and productId, several values each", async () => {
    expect(ids((await list("?filters=all&status=-1,-2")).body)).toEqual([3, 4]);
    expect(ids((await list("?status=-1")).body)).toEqual([]);
    expect(ids((await list(`?userId=${users[1]}`)).body)).toEqual([5]);
    expect(ids((await list(`?userId[]=${users[0]}&userId[]=${users[1]}&filters=all`)).body)).toEqual([1, 2, 3, 4, 5]);
    expect(ids((await list(`?productId=${base + 51}`)).body)).toEqual([2, 5]);
  });

  it("takes parentProductId as that product and its child products", async () => {
    expect(ids((await list(`?parentProductId=${base + 50}`)).body)).toEqual([1, 2, 5]);
    expect(ids((await list(`?parentProductId=${base + 51}`)).body)).toEqual([2, 5]);
  });

  it("finds a product's children through the products, whatever the item itself records", async () => {
    // The demo item 9001 is for product 502, whose parent is 501; the item names no parent.
    const { body } = await list("?parentProductId=501&filters=all", await serverToken(webClient));
    expect(body.data.map((d: { userProductId: string }) => d.userProductId)).toEqual(["9001"]);
  });

  it("bounds created, or with updated the last update, by since and until", async () => {
    expect(ids((await list("?since=-20 days")).body)).toEqual([1, 5]);
    expect(ids((await list("?until=-25 days")).body)).toEqual([2]);
    const { body } = await list("?filters=updated,all&since=yesterday");
    expect(ids(body)).toEqual([3]);
    expect(body.debug.params.options).toMatchObject({ sort: [{ property: "updated", direction: "desc" }] });
  });

  it("sorts, pages and trims like every list", async () => {
    expect(ids((await list("?sort=-userProductId")).body)).toEqual([5, 2, 1]);
    expect(ids((await list("?sort[userId]=desc&sort[created]=asc")).body)).toEqual([5, 2, 1]);
    expect(ids((await list("?limit=1&offset=1")).body)).toEqual([2]);
    expect((await list("?fields=userProductId,status&limit=1")).body.data).toEqual([
      { userProductId: String(base + 1), status: "3" },
    ]);
  });

  it("stays within D1's bound parameters with 40 parent products, each bound twice", async () => {
    const parents = Array.from({ length: 40 }, (_, i) => base + 50 + i).join(",");
    const { res, body } = await list(`?parentProductId=${parents}&filters=active,expired&since=0&until=now`);
    expect(res.status).toBe(200);
    expect(ids(body)).toEqual([2, 1, 5]);
  });

  it("answers an empty list, not an error, when nothing matches", async () => {
    const { res, body } = await list("?userId=1");
    expect(res.status).toBe(200);
    expect(body.data).toEqual([]);
    expect(body.meta).toEqual({ count: 0, offset: 0 });
  });

  it.each([
    ["?filters=cheap", "filters"],
    ["?status=active", "status"],
    ["?userId=me", "userId"],
    ["?sort=price", "sort"],
    ["?fields=price", "fields"],
    ["?since=whenever", "since"],
  ])("refuses %s naming %s", async (query, parameter) => {
    const { res, body } = await list(query);
    expect(res.status).toBe(400);
    expect(body.error!.error_description).toContain(`Invalid parameter value: ${parameter}`);
  });
});

describe("digital contents are the calling client's own", () => {
  it("needs a server token", async () => {
    const { res, body } = await list("", await userToken());
    expect(res.status).toBe(403);
    expect(body.error!.error_description).toContain("Access token rejected");
  });

  it("never shows another client's items, even by user or product", async () => {
    const other = await serverToken(webClient);
    const { body } = await list(`?userId=${users[0]}&filters=all`, other);
    expect(body.data).toEqual([]);
    expect((await list(`?parentProductId=${base + 50}`, other)).body.data).toEqual([]);
    const demo = await list("?filters=all");
    expect(demo.body.data.map((d: { clientId: string }) => d.clientId)).toEqual(Array(5).fill(client.id));
  });
});
