/**
 * A client's products through the API (SPiD's GET/POST /product/{id} and POST /product;
 * docs/management.md "Products"): created, read, changed field by field and deleted by status, by
 * their own client only, with an Idempotency-Key on creates and an audit entry for each write.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { bearer, call, container, serverToken } from "./helpers/http";
import { createClient } from "./helpers/seed";

const FORM = { "Content-Type": "application/x-www-form-urlencoded" };
const REQUIRED = {
  code: "ARCHIVE",
  name: "Archive",
  price: "9900",
  vat: "2500",
  paymentOptions: "2",
  type: "1",
  currency: "NOK",
};

let client: { id: string; secret: string };
let token: string;
let admin: string;
beforeAll(async () => {
  client = await createClient();
  token = await serverToken(client);
  admin = await serverToken(await createClient({ admin: true }));
});

function create(fields: Record<string, string>, headers: Record<string, string> = {}, as = token) {
  return call("/api/2/product", {
    method: "POST",
    headers: { ...bearer(as), ...FORM, ...headers },
    body: new URLSearchParams(fields).toString(),
  });
}

function change(productId: string, fields: Record<string, string>, as = token) {
  return call(`/api/2/product/${productId}`, {
    method: "POST",
    headers: { ...bearer(as), ...FORM },
    body: new URLSearchParams(fields).toString(),
  });
}

async function expectError(res: Response, status: number, description: RegExp) {
  expect(res.status).toBe(status);
  expect((await container(res)).error?.error_description).toMatch(description);
}

describe("POST /api/2/product", () => {
  it("creates the calling client's product, which GET /product/{id} and the list show", async () => {
    const res = await create({
      ...REQUIRED,
      description: "Ten years of papers",
      saleStart: "2026-01-01 00:00:00",
      allowMultiSales: "1",
    });
    expect(res.status).toBe(201);
    const product = (await container(res)).data;
    expect(product).toMatchObject({
      clientId: client.id,
      code: "ARCHIVE",
      name: "Archive",
      price: "9900",
      vat: "2500",
      currency: "NOK",
      type: "1",
      status: "0",
      description: "Ten years of papers",
      saleStart: "2026-01-01 00:00:00",
      allowMultiSales: "1",
    });
    const shown = await call(`/api/2/product/${product.productId}`, { headers: bearer(token) });
    expect((await container(shown)).data).toEqual(product);
    const listed = await call(`/api/2/products?productId=${product.productId}&filters=unavailable`, {
      headers: { ...bearer(token), "x-d1-bookmark": res.headers.get("x-d1-bookmark")! },
    });
    expect((await container(listed)).data).toEqual([product]);

    const audit = await call(`/api/2/audit?clientId=${client.id}&action=product.create`, { headers: bearer(admin) });
    const [entry] = (await container(audit)).data;
    expect(entry.detail).toMatchObject({
      productId: Number(product.productId),
      fields: expect.arrayContaining(["code", "price"]),
    });
  });

  it.each([
    [
      "a required field missing",
      { ...REQUIRED, currency: undefined },
      400,
      /Missing one or more required parameters: currency/,
    ],
    ["an unknown field", { ...REQUIRED, hideItems: "1" }, 400, /Unknown parameter 'hideItems'/],
    ["a type outside SPiD's set", { ...REQUIRED, type: "9" }, 400, /Parameter 'type'/],
    ["a price that is no integer", { ...REQUIRED, price: "99.00" }, 400, /Parameter 'price'/],
    ["a currency that is no ISO code", { ...REQUIRED, currency: "kroner" }, 400, /Parameter 'currency'/],
    ["a time that is none", { ...REQUIRED, saleStart: "soon" }, 400, /Parameter 'saleStart'/],
    ["a javascript: url", { ...REQUIRED, url: "javascript:alert(1)" }, 400, /Parameter 'url'/],
    ["a parent of another client", { ...REQUIRED, parentProductId: "501" }, 400, /parentProductId/],
  ])("refuses %s", async (_, fields, status, description) => {
    const sent = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as Record<
      string,
      string
    >;
    await expectError(await create(sent), status, description);
  });

  it("gives concurrent creates of several clients ids of their own", async () => {
    const tokens = await Promise.all(Array.from({ length: 4 }, async () => serverToken(await createClient())));
    const answers = await Promise.all(tokens.flatMap((as) => [create(REQUIRED, {}, as), create(REQUIRED, {}, as)]));
    expect(answers.map((res) => res.status)).toEqual(Array(8).fill(201));
    const ids = await Promise.all(answers.map(async (res) => (await container(res)).data.productId));
    expect(new Set(ids).size).toBe(8);
  });

  it("makes one product of a create retried, or sent at once, with the same Idempotency-Key", async () => {
    const key = crypto.randomUUID();
    const answers = await Promise.all(Array.from({ length: 5 }, () => create(REQUIRED, { "Idempotency-Key": key })));
    expect(answers.map((res) => res.status)).toEqual(Array(5).fill(201));
    const ids = new Set(await Promise.all(answers.map(async (res) => (await container(res)).data.productId)));
    expect(ids.size).toBe(1);
    const again = await create(REQUIRED, { "Idempotency-Key": key });
    expect((await container(again)).data.productId).toBe([...ids][0]);
    await expectError(await create({ ...REQUIRED, price: "1" }, { "Idempotency-Key": key }), 422, /Idempotency-Key/);
  });
});

describe("POST /api/2/product/{productId}", () => {
  it("changes only the fields sent, and deletes by status -1", async () => {
    const made = (await container(await create({ ...REQUIRED, description: "Kept" }))).data;
    const changed = (await container(await change(made.productId, { price: "12900", status: "3" }))).data;
    expect(changed).toMatchObject({
      price: "12900",
      status: "3",
      description: "Kept",
      code: "ARCHIVE",
      name: "Archive",
    });
    await change(made.productId, { quantityLimit: "100", subscriptionPeriod: "2592000" });
    const cleared = (
      await container(await change(made.productId, { description: "", quantityLimit: "", subscriptionPeriod: "" }))
    ).data;
    expect(cleared).toMatchObject({ description: null, quantityLimit: null, subscriptionPeriod: null });
    const deleted = await change(made.productId, { status: "-1" });
    expect((await container(deleted)).data.status).toBe("-1");
    const listed = await call(`/api/2/products?productId=${made.productId}`, {
      headers: { ...bearer(token), "x-d1-bookmark": deleted.headers.get("x-d1-bookmark")! },
    });
    expect(listed.status).toBe(404);
  });

  it("refuses another client's product, an empty change, and a name cleared", async () => {
    const made = (await container(await create(REQUIRED))).data;
    const other = await serverToken(await createClient());
    await expectError(await change(made.productId, { price: "1" }, other), 404, /Product not found/);
    expect((await call(`/api/2/product/${made.productId}`, { headers: bearer(other) })).status).toBe(404);
    await expectError(await change(made.productId, {}), 400, /No field to change/);
    await expectError(await change(made.productId, { name: "" }), 400, /name/);
    await expectError(await change("not-a-number", { price: "1" }), 404, /Product not found/);
  });
});
