import { describe, expect, it } from "vitest";
import { app } from "../src/app";
import { documentedRoutes } from "../src/http/openapi";
import { USER_FIELDS } from "../src/schemas/responses/user";
import { BASE, bearer, call, container, serverToken, userToken } from "./helpers/http";
import { checkAgainstDocument, openApiDocument } from "./helpers/openapi";

describe("GET /api/2/openapi.json", () => {
  it("is an OpenAPI 3.1 document with the spec's objects as components", async () => {
    const res = await call("/api/2/openapi.json");
    expect(res.status).toBe(200);
    const doc = (await res.json()) as Awaited<ReturnType<typeof openApiDocument>> & { openapi: string };
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.components.schemas)).toEqual(
      expect.arrayContaining([
        "User",
        "LimitedUser",
        "Product",
        "DigitalContent",
        "Mail",
        "Client",
        "DeviceFingerprint",
        "TokenResponse",
        "Status",
        "Version",
      ]),
    );
  });

  it("describes every route of the app, and nothing else", async () => {
    const doc = await openApiDocument();
    const routes = documentedRoutes(app.routes);
    expect(routes.filter((route) => !route.documented).map((r) => `${r.method} ${r.path}`)).toEqual([]);
    const inApp = routes.map((r) => `${r.method.toLowerCase()} ${r.path.replace(/:(\w+)/g, "{$1}")}`).sort();
    const inDocument = Object.entries(doc.paths)
      .flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method} ${path}`))
      .sort();
    expect(inDocument).toEqual(inApp);
    expect(inApp).toEqual(
      expect.arrayContaining([
        "get /api/2/users",
        "get /api/2/user/{userId}",
        "post /api/2/devices",
        "post /oauth/token",
        "get /.well-known/jwks.json",
        "get /api/2/describe/{object}",
      ]),
    );
  });

  it("catches a response the document does not describe (the check every test runs)", async () => {
    const real = await call("/api/2/me", { headers: bearer(await userToken()) });
    const body = await container(real);
    const { email: _, ...withoutEmail } = body.data;
    const tampered = Response.json({ ...body, data: withoutEmail });
    await expect(checkAgainstDocument(new Request(`${BASE}/api/2/me`), tampered)).rejects.toThrow(
      /does not match the OpenAPI document/,
    );
    const extra = Response.json({ ...body, data: { ...body.data, password: "x" } });
    await expect(checkAgainstDocument(new Request(`${BASE}/api/2/me`), extra)).rejects.toThrow();
    // A success under a status the operation does not list is read as a failure, and fails.
    const undocumented = Response.json(body, { status: 201 });
    await expect(checkAgainstDocument(new Request(`${BASE}/api/2/me`), undocumented)).rejects.toThrow();
  });

  it("documents the token each endpoint needs and the form each one reads", async () => {
    const doc = (await openApiDocument()) as unknown as {
      paths: Record<string, Record<string, { security?: unknown; requestBody?: { content: Record<string, unknown> } }>>;
    };
    expect(doc.paths["/api/2/users"]!.get!.security).toEqual([{ serverToken: [] }]);
    expect(doc.paths["/api/2/products"]!.get!.security).toEqual([{ serverToken: [] }, { userToken: [] }]);
    expect(doc.paths["/api/2/status"]!.get!.security).toBeUndefined();
    expect(Object.keys(doc.paths["/api/2/devices"]!.post!.requestBody!.content)).toEqual([
      "application/x-www-form-urlencoded",
    ]);
  });
});

describe("the objects' JSON Schemas", () => {
  it.each([
    ["User", USER_FIELDS.length],
    ["Product", 35],
    ["DigitalContent", 12],
    ["Mail", 8],
    ["Client", 14],
    ["DeviceFingerprint", 1],
    ["UserProductAccess", 7],
  ])("has %s's under components.schemas", async (object, properties) => {
    const schemas = ((await openApiDocument()) as unknown as { components: { schemas: Record<string, any> } })
      .components.schemas;
    expect(schemas[object]).toMatchObject({ type: "object", additionalProperties: false });
    expect(Object.keys(schemas[object].properties)).toHaveLength(properties);
  });
});

describe("GET /api/2/reference", () => {
  it("renders every operation as a page with no script at all", async () => {
    const res = await call("/api/2/reference");
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toMatch(/^text\/html/);
    const policy = res.headers.get("Content-Security-Policy")!;
    expect(policy).toMatch(/default-src 'none'/);
    expect(policy).toMatch(/style-src 'sha256-[A-Za-z0-9+/]+=*'/);
    expect(policy).toMatch(/frame-ancestors 'none'/);
    const page = await res.text();
    expect(page).not.toMatch(/<script/i);
    for (const path of ["/api/2/users", "/api/2/user/{userId}", "/oauth/token", "/api/2/mail"]) {
      expect(page).toContain(path);
    }
  });

  it("needs no token and is never rate limited", async () => {
    const res = await call("/api/2/reference", { headers: bearer(await serverToken()) });
    expect(res.status).toBe(200);
    expect(res.headers.get("X-RateLimit-Limit")).toBeNull();
  });
});
