import { beforeAll, describe, expect, it } from "vitest";
import { PRODUCT_FIELDS } from "../src/schemas/responses/product";
import { bearer, call, type Container, container, serverToken, userToken, webClient } from "./helpers/http";
import { createClient, importData } from "./helpers/seed";

const DAY = 86_400;
const now = Math.floor(Date.now() / 1000);

/** A client of its own with one product of each status and type, created on known days. */
let client: { id: string; secret: string };
let token: string;
let base: number;

const product = (id: number, overrides: Record<string, unknown>) => ({
  productId: id,
  clientId: client.id,
  type: 0,
  name: `Product ${id}`,
  code: `CODE-${id}`,
  price: 1000 + id,
  vat: 2500,
  currency: "NOK",
  status: 3,
  created: now - 10 * DAY,
  ...overrides,
});

beforeAll(async () => {
  client = await createClient();
  token = await serverToken(client);
  base = 600_000 + Math.floor(Math.random() * 1000) * 100;
  await importData({
    version: 2,
    products: [
      product(base + 1, { status: 3, type: 0, name: "Alpha", price: 300, created: now - 30 * DAY }),
      product(base + 2, { status: 2, type: 2, name: "Bravo", price: 100, created: now - 20 * DAY }),
      product(base + 3, { status: 1, type: 1, name: "Charlie", price: 200, created: now - 2 * DAY }),
      product(base + 4, { status: 0, type: 1, name: "Delta", price: 200, parentProductId: base + 3 }),
      product(base + 5, { status: -1, type: 2, name: "Echo", price: 500, changed: now - DAY }),
    ],
  });
});

async function list(query: string, bearerToken = token): Promise<{ res: Response; body: Container }> {
  const res = await call(`/api/2/products${query}`, { headers: bearer(bearerToken) });
  return { res, body: await container(res) };
}

const ids = (body: Container) => (body.data as { productId: string }[]).map((p) => Number(p.productId) - base);

async function expectInvalid(query: string, parameter: string) {
  const { res, body } = await list(query);
  expect(res.status).toBe(400);
  expect(body.error).toMatchObject({ error: "invalid_request", error_code: 400 });
  expect(body.error!.error_description).toContain(`Invalid parameter value: ${parameter}`);
}

describe("GET /api/2/products", () => {
  it("lists the client's products as Product objects, integers as strings where the spec says", async () => {
    const { res, body } = await list("", await serverToken(webClient));
    expect(res.status).toBe(200);
    expect(body).toMatchObject({ object: "Products", type: "collection", meta: { count: 2, offset: 0 } });
    const [monthly] = body.data;
    expect(Object.keys(monthly).sort()).toEqual([...PRODUCT_FIELDS].sort());
    expect(monthly).toMatchObject({
      productId: "501",
      parentProductId: null,
      clientId: webClient.id,
      type: "2",
      bundle: "0",
      price: "14900",
      vat: "2500",
      currency: "NOK",
      paymentOptions: "6",
      quantityCount: "0",
      subscriptionPeriod: 2592000,
      subscriptionAutoRenew: "1",
      allowMultiSales: "0",
      status: "3",
      saleStart: null,
      created: "2023-01-01 00:00:00",
    });
    expect(body.data[1]).toMatchObject({
      productId: "502",
      parentProductId: "501",
      type: "1",
      price: "4900",
      status: "1",
    });
  });

  it("accepts a user token, listing its own client's products", async () => {
    const { res, body } = await list("", await userToken());
    expect(res.status).toBe(200);
    expect(body.data.map((p: { productId: string }) => p.productId)).toEqual(["501", "502"]);
  });

  it("leaves deleted products out unless asked for, and shows the parsed query in debug.params", async () => {
    const { body } = await list("");
    expect(ids(body)).toEqual([1, 2, 3, 4]);
    expect(body.debug.params).toEqual({
      options: {
        limit: 100,
        offset: 0,
        since: null,
        until: null,
        sort: [{ property: "productId", direction: "asc" }],
        fields: null,
        filters: { status: [], type: [], other: [] },
      },
      where: {},
    });
    expect(ids((await list("?filters=deleted")).body)).toEqual([5]);
  });

  it("ORs status filters, ORs type filters and ANDs the two groups", async () => {
    expect(ids((await list("?filters=available,invisible")).body)).toEqual([1, 3]);
    expect(ids((await list("?filters=subscription,content")).body)).toEqual([2, 3, 4]);
    expect(ids((await list("?filters=content&filters=unavailable,unselectable")).body)).toEqual([4]);
    expect(ids((await list("?filters[]=subscription&filters[]=deleted")).body)).toEqual([5]);
  });

  it("takes multi-valued criteria in all three forms", async () => {
    for (const query of [
      `?productId=${base + 1},${base + 3}`,
      `?productId[]=${base + 1}&productId[]=${base + 3}`,
      `?productId=${base + 1}&productId=${base + 3}`,
    ]) {
      expect(ids((await list(query)).body)).toEqual([1, 3]);
    }
  });

  it("matches name, code, price and parentProductId exactly", async () => {
    expect(ids((await list("?name=Bravo")).body)).toEqual([2]);
    expect(ids((await list(`?code=CODE-${base + 3}`)).body)).toEqual([3]);
    expect(ids((await list("?price=200")).body)).toEqual([3, 4]);
    expect(ids((await list(`?parentProductId=${base + 3}`)).body)).toEqual([4]);
    expect((await list("?name=brav")).res.status).toBe(404);
  });

  it("sorts by sort[prop] terms in order, or by a plain sort=prop / sort=-prop", async () => {
    // Equal prices fall back on the id, in the direction of the last term.
    expect(ids((await list("?sort=-price")).body)).toEqual([1, 4, 3, 2]);
    expect(ids((await list("?sort[price]=desc")).body)).toEqual([1, 4, 3, 2]);
    expect(ids((await list("?sort[]=-price")).body)).toEqual([1, 4, 3, 2]);
    expect(ids((await list("?sort[name]=desc&sort=price")).body)).toEqual([4, 3, 2, 1]);
    expect(ids((await list("?sort=price&sort[name]=desc")).body)).toEqual([2, 4, 3, 1]);
    expect(ids((await list("?sort[price]=asc&sort[name]=desc")).body)).toEqual([2, 4, 3, 1]);
    expect(ids((await list("?sort=name")).body)).toEqual([1, 2, 3, 4]);
    await expectInvalid("?sort=colour", "sort");
    await expectInvalid("?sort[price]=up", "sort[price]");
  });

  it("pages with limit and offset, capping limit at 1000", async () => {
    const { body } = await list("?limit=2&offset=1");
    expect(ids(body)).toEqual([2, 3]);
    expect(body.meta).toEqual({ count: 2, offset: 1 });
    const capped = await list("?limit=5000");
    expect(capped.res.status).toBe(200);
    expect((capped.body.debug.params.options as { limit: number }).limit).toBe(1000);
    for (const bad of ["-1", "0", "abc", "1.5", "", "1e3"]) await expectInvalid(`?limit=${bad}`, "limit");
    for (const bad of ["-2", "1000", "5000"]) await expectInvalid(`?offset=${bad}`, "offset");
    expect((await list("?offset=999&limit=5")).res.status).toBe(404);
    await expectInvalid("?limit=1&limit=2", "limit");
  });

  it("bounds created with since and until, in any form the list machine reads", async () => {
    expect(ids((await list("?since=-5 days")).body)).toEqual([3]);
    expect(ids((await list(`?until=${now - 15 * DAY}`)).body)).toEqual([1, 2]);
    const from = new Date((now - 25 * DAY) * 1000).toISOString().slice(0, 10);
    // Bounded by time and sorted by nothing else, a page comes in time order.
    expect(ids((await list(`?since=${from}&until=yesterday`)).body)).toEqual([2, 4, 3]);
    await expectInvalid("?since=the day after never", "since");
    await expectInvalid("?until=2023-02-30", "until");
  });

  it("with the updated filter, bounds and orders by the last change instead", async () => {
    const { body } = await list("?filters=updated,deleted&since=-2 days");
    expect(ids(body)).toEqual([5]);
    const all = await list("?filters=updated");
    expect(all.body.debug.params.options).toMatchObject({ sort: [{ property: "changed", direction: "desc" }] });
  });

  it("trims each product to the selected fields, and refuses unknown ones", async () => {
    const { body } = await list(`?fields=name,productId&productId=${base + 1}`);
    expect(body.data).toEqual([{ name: "Alpha", productId: String(base + 1) }]);
    await expectInvalid("?fields=name,colour", "fields");
  });

  it("refuses unknown filters and parameters", async () => {
    await expectInvalid("?filters=cheap", "filters");
    const { res, body } = await list("?colour=red");
    expect(res.status).toBe(400);
    expect(body.error!.error_description).toContain("Unknown parameter");
    expect(body.error!.error_description).not.toContain("colour");
    await expectInvalid("?productId=abc", "productId");
  });

  it("takes at most 40 criterion values a request, so no query outgrows D1's bound parameters", async () => {
    const values = (n: number, from = 1) => Array.from({ length: n }, (_, i) => from + i).join(",");
    expect((await list(`?productId=${values(40, base + 1)}`)).res.status).toBe(200);
    await expectInvalid(`?productId=${values(41)}`, "productId");
    await expectInvalid(`?productId=${values(30)}&price=${values(11)}`, "price");
    await expectInvalid(`?productId=${values(100)}`, "productId");
  });

  it("answers 404 No products found when nothing matches", async () => {
    const { res, body } = await list("?name=Nothing");
    expect(res.status).toBe(404);
    expect(body.error).toMatchObject({ error_code: 404, error_description: "No products found" });
  });
});

describe("products are the calling client's own", () => {
  it("never lists another client's products, even by id", async () => {
    expect((await list(`?productId=${base + 1}`, await serverToken(webClient))).res.status).toBe(404);
    expect((await list("?productId=501,502")).res.status).toBe(404);
  });
});
