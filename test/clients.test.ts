import { describe, expect, it } from "vitest";
import { appClient, bearer, call, container, fjordClient, serverToken, webClient } from "./helpers/http";

describe("GET /api/2/clients", () => {
  it("lists the caller's merchant's clients keyed by id, as Client objects", async () => {
    const res = await call("/api/2/clients", { headers: bearer(await serverToken()) });
    expect(res.status).toBe(200);
    const body = await container(res);
    expect(body).toMatchObject({ object: "Clients", type: "element", code: 200, error: null });
    expect(body.debug.route).toEqual({ name: "List clients", url: "/api/2/clients", controller: "api/clients#index" });
    expect(Object.keys(body.data)).toEqual(expect.arrayContaining([webClient.id, appClient.id]));
    expect(body.data[webClient.id]).toEqual({
      id: webClient.id,
      name: "Nordic Daily Web",
      alias: "nordicdaily-web",
      domain: "www.nordicdaily.example",
      fields: webClient.fields,
      merchantId: 10,
      css: {},
      termsCss: {},
      unregisteredPayments: false,
      accessTokenLifetime: "604800",
      enableSso: true,
      universalDataAccess: false,
      redirectUris: webClient.redirectUris,
      autoApprove: true,
    });
  });

  it("never shows another merchant's clients", async () => {
    const ours = await container(await call("/api/2/clients", { headers: bearer(await serverToken()) }));
    expect(ours.data).not.toHaveProperty(fjordClient.id);
    const theirs = await container(
      await call("/api/2/clients", {
        headers: {
          ...bearer(await serverToken(fjordClient, {}, { "CF-Connecting-IP": "127.0.0.1" })),
          "CF-Connecting-IP": "127.0.0.1",
        },
      }),
    );
    expect(Object.keys(theirs.data)).toEqual([fjordClient.id]);
  });

  it("never shows a secret, a hash or internal settings", async () => {
    const text = await (await call("/api/2/clients", { headers: bearer(await serverToken()) })).text();
    for (const secret of [webClient.secret, webClient.signingSecret, appClient.secret, appClient.signingSecret])
      expect(text).not.toContain(secret);
    for (const field of [
      "secret",
      "secretHash",
      "signingSecret",
      "ipWhitelist",
      "ipAllowList",
      "rateLimit",
      "grantTypes",
    ]) {
      expect(text).not.toContain(`"${field}"`);
    }
  });
});
