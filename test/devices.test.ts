import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { bearer, call, container, postForm, serverToken, userToken } from "./helpers/http";
import { createUser } from "./helpers/seed";

const device = { deviceId: "A1B2C3D4-E5F6", platform: "iPhone", applicationName: "Nordic Daily" };

async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

async function register(fields: Record<string, string>, token: string) {
  const res = await postForm("/api/2/devices", fields, bearer(token));
  return { res, body: await container(res) };
}

describe("POST /api/2/devices", () => {
  it("stores the fingerprint for the token's user and answers 201 with its hash", async () => {
    const user = await createUser(9301);
    const token = await userToken(user);
    const { res, body } = await register({ ...device, applicationVersion: "5.2.1" }, token);
    expect(res.status).toBe(201);
    expect(body).toMatchObject({ object: "DeviceFingerprint", code: 201, error: null });
    expect(body.data).toEqual({
      hash: await sha256Hex(JSON.stringify([device.deviceId, "ios", device.applicationName])),
    });
    const rows = await env.DB.prepare("SELECT platform, application_version FROM device_fingerprints WHERE user_id = ?")
      .bind(9301)
      .all();
    expect(rows.results).toEqual([{ platform: "iPhone", application_version: "5.2.1" }]);
  });

  it("gives the same device and application the same hash, and stores it once", async () => {
    const token = await userToken(await createUser(9302));
    const first = (await register(device, token)).body.data.hash;
    const again = await register({ ...device, applicationVersion: "6.0" }, token);
    expect(again.res.status).toBe(201);
    expect(again.body.data.hash).toBe(first);
    expect((await register({ ...device, platform: "iPad" }, token)).body.data.hash).toBe(first);
    expect((await register({ ...device, platform: "Android" }, token)).body.data.hash).not.toBe(first);
    expect((await register({ ...device, applicationName: "Other App" }, token)).body.data.hash).not.toBe(first);
    const rows = await env.DB.prepare("SELECT platform FROM device_fingerprints WHERE user_id = ? ORDER BY id")
      .bind(9302)
      .all<{ platform: string }>();
    // iPhone, then the same fingerprint as iPad (recorded as such), then the Android and other-app ones.
    expect(rows.results.map((row) => row.platform)).toEqual(["iPad", "Android", "iPhone"]);
  });

  it.each([
    ["deviceId is missing", { platform: "iPhone", applicationName: "App" }, "deviceId"],
    ["platform is not one of iPad, iPhone, Android", { ...device, platform: "Windows" }, "platform"],
    ["platform differs in case", { ...device, platform: "iphone" }, "platform"],
    ["applicationName is missing", { deviceId: "x", platform: "Android" }, "applicationName"],
    ["deviceId is too long", { ...device, deviceId: "x".repeat(256) }, "deviceId"],
    ["deviceId holds a control character", { ...device, deviceId: "a\u0000b" }, "deviceId"],
    ["applicationVersion is empty", { ...device, applicationVersion: "" }, "applicationVersion"],
  ])("refuses a payload where %s with 400 Invalid payload data", async (_, fields, parameter) => {
    const { res, body } = await register(fields, await userToken());
    expect(res.status).toBe(400);
    expect(body.error!.error_description).toMatch(new RegExp(`^Invalid payload data: Parameter '${parameter}'`));
  });

  it("refuses a body that is not a form", async () => {
    const res = await call("/api/2/devices", {
      method: "POST",
      headers: { ...bearer(await userToken()), "Content-Type": "application/json" },
      body: JSON.stringify(device),
    });
    expect(res.status).toBe(400);
    expect((await container(res)).error!.error_description).toMatch(/^Invalid payload data: /);
  });
});

describe("who may register a device", () => {
  it("needs a user token: a server token is 403, none is 401", async () => {
    expect((await register(device, await serverToken())).res.status).toBe(403);
    expect((await postForm("/api/2/devices", device)).status).toBe(401);
  });

  it("refuses a user removed since the token was issued with 403 Unauthorised access", async () => {
    const token = await userToken(await createUser(9304));
    await env.DB.prepare("DELETE FROM users WHERE id = ?").bind(9304).run();
    const { res, body } = await register(device, token);
    expect(res.status).toBe(403);
    expect(body.error!.error_description).toBe("Unauthorised access");
  });

  it("refuses a user blocked since the token was issued with 403 Unauthorised access", async () => {
    const user = await createUser(9303);
    const token = await userToken(user);
    await createUser(9303, { status: -2 });
    const { res, body } = await register(device, token);
    expect(res.status).toBe(403);
    expect(body.error).toMatchObject({ error: "access_denied", error_description: "Unauthorised access" });
  });
});
