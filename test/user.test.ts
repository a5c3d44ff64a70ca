import { describe, expect, it } from "vitest";
import { LIMITED_USER_FIELDS } from "../src/schemas/responses/user";
import {
  appClient,
  bearer,
  call,
  container,
  erik,
  ingrid,
  kari,
  serverToken,
  userToken,
  webClient,
} from "./helpers/http";

async function user(key: string, token?: string) {
  const res = await call(`/api/2/user/${key}`, { headers: bearer(token ?? (await serverToken(webClient))) });
  return { res, body: await container(res) };
}

describe("GET /api/2/user/{userId}", () => {
  it("shows a user connected to the calling client in full, with the same User view as /me", async () => {
    // Signing in records lastLoggedIn, so the token comes first.
    const ownToken = await userToken();
    const { res, body } = await user("1001");
    expect(res.status).toBe(200);
    expect(body).toMatchObject({ object: "User", type: "element" });
    expect(body.data).toMatchObject({
      userId: "1001",
      uuid: ingrid.uuid,
      email: "ingrid.hansen@example.org",
      phoneNumber: ingrid.phoneNumber,
      merchants: [10],
    });
    const me = await container(await call("/api/2/me", { headers: bearer(ownToken) }));
    expect(body.data).toEqual(me.data);
  });

  it("finds the user by uuid too, in any case", async () => {
    const { body } = await user(ingrid.uuid.toUpperCase());
    expect(body.data.userId).toBe("1001");
  });

  it("shows a user of the merchant who is not connected to the client in the limited view", async () => {
    const { res, body } = await user(String(erik.userId), await serverToken(appClient));
    expect(res.status).toBe(200);
    expect(Object.keys(body.data).sort()).toEqual([...LIMITED_USER_FIELDS].sort());
    expect(body.data).toMatchObject({ userId: String(erik.userId), displayName: erik.displayName });
    expect(body.data).not.toHaveProperty("email");
    expect(body.data).not.toHaveProperty("emails");
  });

  it.each([
    ["a user of another merchant", String(kari.userId)],
    ["an unknown userId", "999999999"],
    ["an unknown uuid", crypto.randomUUID()],
    ["the deprecated legacy id", ingrid.id!],
    ["a userId with a leading zero", "01001"],
    ["something that is no id", "me"],
  ])("answers 404 User not found for %s", async (_, key) => {
    const { res, body } = await user(key);
    expect(res.status).toBe(404);
    expect(body.error).toMatchObject({ error_code: 404, error_description: "User not found" });
  });
});

describe("GET /api/2/user/{userId} with a user token", () => {
  it("shows the token's own user, by userId or uuid, exactly as /me does", async () => {
    const token = await userToken(ingrid);
    const me = await container(await call("/api/2/me", { headers: bearer(token) }));
    for (const key of ["1001", ingrid.uuid]) {
      const { res, body } = await user(key, token);
      expect(res.status).toBe(200);
      expect(body.data).toEqual(me.data);
    }
  });

  it.each([
    ["another user of the same client", String(erik.userId)],
    ["a user of another merchant", String(kari.userId)],
    ["a user who does not exist", "999999999"],
    ["an unknown uuid", crypto.randomUUID()],
    ["something that is no id", "me"],
  ])("refuses %s with 403 Token is not authorized to access this user", async (_, key) => {
    const { res, body } = await user(key, await userToken(ingrid));
    expect(res.status).toBe(403);
    expect(body.error).toMatchObject({
      error: "access_denied",
      code: 403,
      description: "Token is not authorized to access this user",
    });
  });
});
