/**
 * A user's access to a client's digital content: GET, POST and DELETE
 * /api/2/user/{userId}/product/{productId}, and GET /api/2/user/{userId}/products.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { bearer, call, type Container, container, fjordClient, serverToken, userToken } from "./helpers/http";
import { createClient, createUser, importData } from "./helpers/seed";

let shop: { id: string; secret: string };
let sibling: { id: string; secret: string };
let admin: { id: string; secret: string };
let token: string;
let base: number;
/** The products: a digital content, its child, a subscription, a physical product, a deleted one. */
let content: number, child: number, subscription: number, physical: number, gone: number, siblings: number;
let nextUser: number;

beforeAll(async () => {
  shop = await createClient({ grantTypes: ["client_credentials", "password"] });
  sibling = await createClient();
  admin = await createClient({ admin: true });
  token = await serverToken(shop);
  base = 800_000 + Math.floor(Math.random() * 1000) * 100;
  [content, child, subscription, physical, gone, siblings] = [1, 2, 3, 4, 5, 6].map((i) => base + i) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  nextUser = base + 50;
  const product = (productId: number, type: number, extra: Record<string, unknown> = {}) => ({
    productId,
    clientId: shop.id,
    type,
    name: `Product ${productId}`,
    price: "9900",
    vat: 2500,
    currency: "NOK",
    status: 3,
    created: "2024-01-01 00:00:00",
    ...extra,
  });
  await importData({
    version: 2,
    products: [
      product(content, 1),
      product(child, 1, { parentProductId: content }),
      product(subscription, 2, { subscriptionPeriod: 2592000 }),
      product(physical, 3),
      product(gone, 1, { status: -1 }),
      product(siblings, 1, { clientId: sibling.id }),
    ],
  });
});

/** A user connected to the shop (and whatever else `clients` says). */
async function shopUser(clients: string[] = [shop.id]) {
  const userId = nextUser++;
  await createUser(userId, { clients });
  return userId;
}

/** A row of the user's digital contents at the shop, as a merchant's import writes it. */
async function importHolding(userProductId: number, userId: number, productId: number, status: number) {
  const created = "2024-01-01 00:00:00";
  await importData({
    version: 2,
    digitalContents: [{ userProductId, productId, userId, clientId: shop.id, status, created, updated: created }],
  });
}

async function access(method: string, userId: number | string, productId: number, as = token, query = "") {
  const res = await call(`/api/2/user/${userId}/product/${productId}${query}`, { method, headers: bearer(as) });
  return { res, body: await container(res) };
}

async function products(userId: number | string, query = "", as = token) {
  const res = await call(`/api/2/user/${userId}/products${query}`, { headers: bearer(as) });
  return { res, body: await container(res) };
}

async function rows(userId: number, productId: number) {
  const { results } = await env.DB.prepare(
    "SELECT id, client_id, status, count FROM digital_contents WHERE user_id = ? AND product_id = ? ORDER BY id",
  )
    .bind(userId, productId)
    .all<{ id: number; client_id: string; status: number; count: number }>();
  return results;
}

function expectError(body: Container, code: number, description: string) {
  expect(body.error).toMatchObject({ code, description });
}

describe("granting, reading and revoking", () => {
  it("grants a digital content product: the access, the user's products and /digitalcontents show it at once", async () => {
    const userId = await shopUser();
    const granted = await access("POST", userId, content);
    expect(granted.res.status).toBe(200);
    expect(granted.body).toMatchObject({
      object: "UserProductAccess",
      data: { productId: String(content), result: true },
    });
    expect(granted.res.headers.get("x-d1-bookmark")).toBeTruthy();

    expect((await access("GET", userId, content)).body.data).toEqual({ productId: String(content), result: true });
    const listed = await products(userId);
    expect(listed.body).toMatchObject({ type: "collection", meta: { count: 1, offset: 0 } });
    expect(listed.body.data[String(content)]).toMatchObject({
      productId: String(content),
      userId: String(userId),
      clientId: shop.id,
      status: "3",
      statusMsg: "Available",
      count: "1",
    });
    const contents = await container(await call(`/api/2/digitalcontents?userId=${userId}`, { headers: bearer(token) }));
    expect(contents.data).toEqual([listed.body.data[String(content)]]);
  });

  it("grants twice without a second row", async () => {
    const userId = await shopUser();
    const first = await access("POST", userId, content);
    const second = await access("POST", userId, content);
    expect(second.res.status).toBe(200);
    expect(second.body.data).toEqual(first.body.data);
    expect(await rows(userId, content)).toHaveLength(1);
  });

  it("revokes: the grant answers deleted, access ends, and revoking again answers the same", async () => {
    const userId = await shopUser();
    await access("POST", userId, content);
    const revoked = await access("DELETE", userId, content);
    expect(revoked.res.status).toBe(200);
    expect(revoked.body).toMatchObject({ object: "DigitalContent" });
    expect(revoked.body.data).toMatchObject({
      productId: String(content),
      status: "-1",
      count: "0",
      statusMsg: "Deleted",
    });
    const check = await access("GET", userId, content);
    expect(check.res.status).toBe(404);
    expectError(check.body, 404, "No access to that product.");
    // A retry after a lost answer finds the same revoked grant.
    const again = await access("DELETE", userId, content);
    expect(again.res.status).toBe(200);
    expect(again.body.data).toEqual(revoked.body.data);
    expect((await products(userId)).body.data).toEqual({});
    expect((await products(userId, "?filters=all")).body.data[String(content)]).toMatchObject({ status: "-1" });
  });

  it("grants again after a revocation on the same userProductId", async () => {
    const userId = await shopUser();
    await access("POST", userId, content);
    const { body } = await access("DELETE", userId, content);
    await access("POST", userId, content);
    expect((await products(userId)).body.data[String(content)]).toMatchObject({
      userProductId: body.data.userProductId,
      status: "3",
      count: "1",
    });
    expect(await rows(userId, content)).toHaveLength(1);
  });

  it("refuses to revoke what the user never held, with SPiD's 400", async () => {
    const { res, body } = await access("DELETE", await shopUser(), content);
    expect(res.status).toBe(400);
    expect(body.error?.description).toMatch(/^Was not able to remove access/);
  });

  it("gives access to a product through its parent, as SPiD's digital content does", async () => {
    const userId = await shopUser();
    await access("POST", userId, content);
    expect((await access("GET", userId, child)).body.data).toEqual({ productId: String(child), result: true });
    // Not the other way round.
    const other = await shopUser();
    await access("POST", other, child);
    expect((await access("GET", other, content)).res.status).toBe(404);
  });

  it("does not lift a blocked grant", async () => {
    const userId = await shopUser();
    await importHolding(base + 90 + (userId % 10), userId, content, -2);
    const { res, body } = await access("POST", userId, content);
    expect(res.status).toBe(400);
    expect(body.error?.description).toMatch(/^Was not able to grant access/);
    expect((await access("GET", userId, content)).res.status).toBe(404);
    // Nor can a revocation and a grant lift it: the revocation leaves it alone, the grant is refused.
    const revoked = await access("DELETE", userId, content);
    expect(revoked.res.status).toBe(400);
    expect(revoked.body.error?.description).toMatch(/^Was not able to remove access/);
    expect((await access("POST", userId, content)).res.status).toBe(400);
    expect((await rows(userId, content)).map((r) => r.status)).toEqual([-2]);
  });

  it("ends in one row, whose status is what the access check says, after grants and revocations sent at once", async () => {
    const userId = await shopUser();
    const methods = Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? "POST" : "DELETE"));
    const results = await Promise.all(methods.map((method) => access(method, userId, content)));
    // A grant always succeeds; a revocation does, or is a 400 when it landed before any grant.
    results.forEach(({ res }, i) => expect(methods[i] === "POST" ? [200] : [200, 400]).toContain(res.status));
    const [row, ...more] = await rows(userId, content);
    expect(more).toEqual([]);
    const held = (await access("GET", userId, content)).res.status === 200;
    expect(held).toBe(row!.status === 3);
    await access("POST", userId, content);
    expect((await rows(userId, content)).map((r) => r.status)).toEqual([3]);
  });
});

describe("what can be granted", () => {
  it.each([
    ["a subscription", () => subscription, /^Was not able to grant access: a subscription/],
    ["a physical product", () => physical, /^Was not able to grant access: only digital content/],
  ])("refuses to grant %s with SPiD's 400", async (_, productId, description) => {
    const userId = await shopUser();
    const { res, body } = await access("POST", userId, productId());
    expect(res.status).toBe(400);
    expect(body.error?.description).toMatch(description);
    expect((await access("DELETE", userId, productId())).body.error?.description).toMatch(
      /^Was not able to remove access/,
    );
    expect(await rows(userId, productId())).toEqual([]);
  });

  it("answers a subscription's access check as no access: no subscriptions are held here", async () => {
    const { res, body } = await access("GET", await shopUser(), subscription);
    expect(res.status).toBe(404);
    expectError(body, 404, "No access to that product.");
  });

  it.each([
    ["a deleted product", () => gone],
    ["an unknown product", () => base + 99],
    ["another client's product", () => siblings],
    ["something that is no id", () => "abc" as unknown as number],
    ["an id past the safe integers", () => "9007199254740993" as unknown as number],
    ["an id with a leading zero", () => `0${content}` as unknown as number],
  ])("answers 404 Product not found for %s", async (_, productId) => {
    const { res, body } = await access("POST", await shopUser(), productId());
    expect(res.status).toBe(404);
    expectError(body, 404, "Product not found");
  });
});

describe("who may", () => {
  it("refuses a user connected only to another client of the merchant, and hides one of another merchant", async () => {
    const ofSibling = await shopUser([sibling.id]);
    const refused = await access("POST", ofSibling, content);
    expect(refused.res.status).toBe(403);
    expectError(refused.body, 403, "Client is not authorized to access this user");
    const elsewhere = await shopUser([fjordClient.id]);
    for (const method of ["GET", "POST", "DELETE"]) {
      const { res, body } = await access(method, elsewhere, content);
      expect(res.status).toBe(404);
      expectError(body, 404, "User not found");
    }
    expect((await access("POST", base + 98, content)).res.status).toBe(404);
  });

  it("keeps another client of the merchant to its own products unless it is an admin naming the client", async () => {
    const userId = await shopUser([shop.id, sibling.id]);
    const siblingToken = await serverToken(sibling);
    expect((await access("POST", userId, content, siblingToken)).res.status).toBe(404);
    const named = await access("POST", userId, content, siblingToken, `?clientId=${shop.id}`);
    expect(named.res.status).toBe(401);
    expectError(named.body, 401, "Your client doesn't have administration rights for this client");
    const byAdmin = await access("POST", userId, content, await serverToken(admin), `?clientId=${shop.id}`);
    expect(byAdmin.res.status).toBe(200);
    expect((await rows(userId, content)).map((r) => r.client_id)).toEqual([shop.id]);
    // Another merchant's admin cannot name the shop.
    const foreign = await createClient({ merchantId: 20, admin: true });
    const other = await access("GET", userId, content, await serverToken(foreign), `?clientId=${shop.id}`);
    expect(other.res.status).toBe(404);
    expectError(other.body, 404, "Client ID mismatch");
  });

  it("reads across the merchant's clients with filters=merchant, for its own users only", async () => {
    const userId = await shopUser([shop.id, sibling.id]);
    const siblingToken = await serverToken(sibling);
    await access("POST", userId, siblings, siblingToken);
    expect((await access("GET", userId, siblings)).res.status).toBe(404);
    expect((await access("GET", userId, siblings, token, "?filters=merchant")).body.data).toEqual({
      productId: String(siblings),
      result: true,
    });
    expect((await access("GET", userId, siblings, token, "?filters=all")).res.status).toBe(400);
    // A user of the sibling alone is not the shop's to ask about, merchant filter or not.
    const theirs = await shopUser([sibling.id]);
    await access("POST", theirs, siblings, siblingToken);
    const refused = await access("GET", theirs, siblings, token, "?filters=merchant");
    expect(refused.res.status).toBe(403);
    expectError(refused.body, 403, "Client is not authorized to access this user");
  });

  it("lets a user token read its own user's access and products, and nobody else's; never grant", async () => {
    const userId = await shopUser();
    await access("POST", userId, content);
    const user = await userToken(
      { email: `user${userId}@example.org`, password: "a long enough passphrase" },
      {
        ...shop,
        redirectUris: ["https://test.example/callback"],
      },
    );
    expect((await access("GET", userId, content, user)).res.status).toBe(200);
    expect(Object.keys((await products(userId, "", user)).body.data)).toEqual([String(content)]);
    const other = await shopUser();
    const refused = await access("GET", other, content, user);
    expect(refused.res.status).toBe(403);
    expectError(refused.body, 403, "Token is not authorized to access this user");
    expect((await products(other, "", user)).res.status).toBe(403);
    expect((await access("POST", userId, content, user)).res.status).toBe(403);
    expect((await access("DELETE", userId, content, user)).res.status).toBe(403);
  });
});

describe("GET /api/2/user/{userId}/products", () => {
  it("keys the user's products by productId, active by default, and pages like every list", async () => {
    const userId = await shopUser();
    await access("POST", userId, content);
    await access("POST", userId, child);
    await importHolding(base + 80 + (userId % 10), userId, physical, 0);
    expect(Object.keys((await products(userId)).body.data)).toEqual([String(content), String(child)]);
    expect(Object.keys((await products(userId, "?filters=expired")).body.data)).toEqual([String(physical)]);
    expect(Object.keys((await products(userId, "?filters=active,expired")).body.data)).toHaveLength(3);
    const page = await products(userId, "?limit=1&offset=1");
    expect(page.body.meta).toEqual({ count: 1, offset: 1 });
    expect(Object.keys(page.body.data)).toEqual([String(child)]);
    expect((await products(userId, "?fields=productId,status")).body.data[String(content)]).toEqual({
      productId: String(content),
      status: "3",
    });
    // By uuid too.
    const { results } = await env.DB.prepare("SELECT uuid FROM users WHERE id = ?")
      .bind(userId)
      .all<{ uuid: string }>();
    expect(Object.keys((await products(results[0]!.uuid)).body.data)).toHaveLength(2);
  });

  it.each([["?filters=content"], ["?sort=productId"], ["?limit=0"], ["?colour=red"]])(
    "refuses %s with 400",
    async (query) => {
      const { res } = await products(await shopUser(), query);
      expect(res.status).toBe(400);
    },
  );
});
