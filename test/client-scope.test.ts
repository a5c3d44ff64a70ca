import { beforeAll, describe, expect, it } from "vitest";
import { LIMITED_USER_FIELDS, USER_FIELDS } from "../src/schemas/responses/user";
import { bearer, call, container, ingrid, serverToken, userToken } from "./helpers/http";
import { createClient, importData } from "./helpers/seed";

/** A merchant with an admin client, a plain client and a sibling that owns data; another merchant's client. */
let admin: { id: string; secret: string };
let plain: { id: string; secret: string };
let sibling: { id: string; secret: string };
let stranger: { id: string; secret: string };
const productId = 700_000 + Math.floor(Math.random() * 10_000) * 10;
const userId = 720_000 + Math.floor(Math.random() * 10_000) * 10;
const merchantId = 950_000 + Math.floor(Math.random() * 10_000) * 2;

beforeAll(async () => {
  await importData({
    merchants: [merchantId, merchantId + 1].map((id) => ({ merchantId: id, name: `Merchant ${id}` })),
  });
  admin = await createClient({ merchantId, admin: true, autoApprove: true });
  plain = await createClient({ merchantId, autoApprove: true });
  sibling = await createClient({ merchantId });
  stranger = await createClient({ merchantId: merchantId + 1 });
  await importData({
    users: [
      {
        userId: String(userId),
        uuid: crypto.randomUUID(),
        status: 1,
        email: `scope${userId}@example.org`,
        published: 0,
        updated: 0,
        clients: [sibling.id],
      },
    ],
    products: [
      {
        productId,
        clientId: sibling.id,
        type: 1,
        name: "Sibling's product",
        price: 100,
        vat: 2500,
        currency: "NOK",
        status: 3,
        created: 0,
      },
    ],
    digitalContents: [
      {
        userProductId: productId,
        productId,
        clientId: sibling.id,
        userId: String(userId),
        status: 1,
        created: 0,
        updated: 0,
      },
    ],
  });
});

async function get(path: string, token: string) {
  const res = await call(path, { headers: bearer(token) });
  return { res, body: await container(res) };
}

describe("reading another client's data with clientId", () => {
  it("lets an admin client read a sibling's products, digital contents and users", async () => {
    const token = await serverToken(admin);
    const products = await get(`/api/2/products?clientId=${sibling.id}`, token);
    expect(products.res.status).toBe(200);
    expect(products.body.data.map((p: { productId: string }) => Number(p.productId))).toEqual([productId]);
    expect(products.body.debug.params.where).toEqual({ clientId: [sibling.id] });
    const contents = await get(`/api/2/digitalcontents?clientId=${sibling.id}`, token);
    expect(contents.body.data.map((d: { userProductId: string }) => Number(d.userProductId))).toEqual([productId]);
    const users = await get(`/api/2/users?clientId=${sibling.id}`, token);
    expect(users.res.status).toBe(200);
    // The client read stands for the caller: its users are shown in full (rule 2).
    expect(users.body.data).toMatchObject([{ userId: String(userId), email: `scope${userId}@example.org` }]);
  });

  it("shows a cached user in full to the client read and limited to another, call by call", async () => {
    const token = await serverToken(admin);
    const fieldsOf = async (path: string) => {
      const { res, body } = await get(path, token);
      expect(res.status).toBe(200);
      const users = body.data as Record<string, unknown>[];
      return Object.keys(users.find((user) => user.userId === String(userId))!).sort();
    };
    // No bookmark: the second and third calls take the profile the first one cached.
    const limited = [...LIMITED_USER_FIELDS].sort();
    expect(await fieldsOf("/api/2/users?filters=merchant")).toEqual(limited);
    expect(await fieldsOf(`/api/2/users?filters=merchant&clientId=${sibling.id}`)).toEqual([...USER_FIELDS].sort());
    expect(await fieldsOf("/api/2/users?filters=merchant")).toEqual(limited);
  });

  it("reads the caller's own data when clientId names the caller", async () => {
    const { res, body } = await get(`/api/2/products?clientId=${plain.id}`, await serverToken(plain));
    expect(res.status).toBe(404);
    expect(body.error!.error_description).toBe("No products found");
  });

  it.each([
    ["/api/2/products", 401, "Your client doesn't have administration rights for this client"],
    ["/api/2/digitalcontents", 401, "Your client doesn't have administration rights for this client"],
    ["/api/2/users", 401, "Your client doesn't have administration rights for this client"],
  ])("refuses a client without administration rights on %s", async (path, status, text) => {
    const { res, body } = await get(`${path}?clientId=${sibling.id}`, await serverToken(plain));
    expect(res.status).toBe(status);
    expect(body.error).toMatchObject({ error: "unauthorized_client", error_code: status, error_description: text });
    expect(body.data).toBeNull();
  });

  it("refuses a user token naming another client, even of an admin client", async () => {
    const token = await userToken(ingrid, { ...admin, redirectUris: ["https://test.example/callback"] });
    const { res, body } = await get(`/api/2/products?clientId=${sibling.id}`, token);
    expect(res.status).toBe(401);
    expect(body.error!.error_description).toBe("You don't have administration rights for this client");
  });

  it("answers Client ID mismatch for another merchant's client, admin or not", async () => {
    for (const caller of [admin, plain]) {
      const { res, body } = await get(`/api/2/products?clientId=${stranger.id}`, await serverToken(caller));
      expect(res.status).toBe(404);
      expect(body.error!.error_description).toBe("Client ID mismatch");
    }
  });

  it("answers Unknown client ID for a client that does not exist", async () => {
    const { res, body } = await get("/api/2/users?clientId=nosuchclient", await serverToken(admin));
    expect(res.status).toBe(404);
    expect(body.error).toMatchObject({ error: "invalid_client_id", error_description: "Unknown client ID" });
  });

  it("refuses more than one clientId", async () => {
    const { res, body } = await get(`/api/2/products?clientId=${sibling.id},${admin.id}`, await serverToken(admin));
    expect(res.status).toBe(400);
    expect(body.error!.error_description).toBe("Invalid parameter value: clientId");
  });

  it("reads the admin flag as it is now, not as the token says", async () => {
    const revoked = await createClient({ merchantId, admin: true });
    const token = await serverToken(revoked);
    expect((await get(`/api/2/products?clientId=${sibling.id}`, token)).res.status).toBe(200);
    await importData({
      clients: [
        {
          id: revoked.id,
          secret: revoked.secret,
          name: "Revoked",
          merchantId,
          redirectUris: ["https://test.example/callback"],
          grantTypes: ["client_credentials"],
          admin: false,
        },
      ],
    });
    const { res } = await get(`/api/2/products?clientId=${sibling.id}`, token);
    expect(res.status).toBe(401);
  });
});
