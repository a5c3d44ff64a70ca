/** GET /api/2/describe/{object}: SPiD's localized descriptions of an object's values. */
import { describe, expect, it } from "vitest";
import { bearer, call, container, serverToken, userToken } from "./helpers/http";

async function describeObject(path: string, token?: string) {
  const res = await call(`/api/2/describe${path}`, { headers: bearer(token ?? (await serverToken())) });
  return { res, body: await container(res) };
}

describe("GET /api/2/describe/{object}", () => {
  it("describes User's status and gender as SPiD's sample does", async () => {
    const { res, body } = await describeObject("/User");
    expect(res.status).toBe(200);
    expect(body).toMatchObject({
      object: "Utility",
      type: "element",
      debug: { params: { where: { object: "User" } } },
    });
    expect(body.data).toEqual({
      "User.gender": {
        male: "Male",
        female: "Female",
        undisclosed: "Undisclosed",
        other: "Other",
        withheld: "Withheld",
      },
      "User.status": {
        "-3": "User deleted",
        "-2": "User blocked",
        "-1": "User inactive",
        "0": "User unverified",
        "1": "User verified",
      },
    });
  });

  it("describes one property with `property`, in the locale asked for, the object's name in any case", async () => {
    const { body } = await describeObject("/user?property=status&locale=nb_NO");
    expect(Object.keys(body.data)).toEqual(["User.status"]);
    expect(body.data["User.status"]["-3"]).toBe("Bruker slettet");
    const swedish = await describeObject("/Product?property=type&locale=sv_SE");
    expect(swedish.body.data).toEqual({
      "Product.type": {
        "0": "Standard",
        "1": "Digitalt innehåll",
        "2": "Prenumeration",
        "3": "Fysisk produkt",
        "4": "Radannonser",
      },
    });
  });

  it("describes Product's status, bundle and payment options, and digital content (Content) statuses", async () => {
    const { body } = await describeObject("/Product");
    expect(Object.keys(body.data)).toEqual([
      "Product.type",
      "Product.status",
      "Product.bundle",
      "Product.paymentOptions",
    ]);
    expect(body.data["Product.status"]["3"]).toBe("Available");
    expect(body.data["Product.paymentOptions"]["6"]).toBeUndefined();
    expect((await describeObject("/Content")).body.data).toEqual({
      "Content.status": { "3": "Available", "0": "Expired", "-1": "Deleted", "-2": "Blocked" },
    });
  });

  it.each(["Order", "Voucher", "__proto__", "constructor", "toString"])(
    "answers SPiD's 404 for an object it has no description of: %s",
    async (object) => {
      const { res, body } = await describeObject(`/${object}`);
      expect(res.status).toBe(404);
      expect(body.error).toMatchObject({ code: 404, description: "No description found for this object" });
    },
  );

  it("answers SPiD's 400 when no object is named", async () => {
    const { res, body } = await describeObject("");
    expect(res.status).toBe(400);
    expect(body.error).toMatchObject({ code: 400, description: "Missing required parameter object" });
  });

  it.each([
    ["an unknown property", "?property=colour", 404],
    ["an unknown locale", "?locale=de_DE", 400],
    ["a repeated locale", "?locale=en_US&locale=nb_NO", 400],
  ])("refuses %s", async (_, query, status) => {
    expect((await describeObject(`/User${query}`)).res.status).toBe(status);
  });

  it("needs a server token, as SPiD's does", async () => {
    expect((await call("/api/2/describe/User")).status).toBe(401);
    expect((await describeObject("/User", await userToken())).res.status).toBe(403);
  });
});
