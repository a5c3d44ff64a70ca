import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatDatetime, LAST_SECOND } from "../src/http/datetime";
import { pathnameOf } from "../src/http/format";
import { basicAuth, bearer, call, container, postForm, serverToken, webClient } from "./helpers/http";
import { createClient } from "./helpers/seed";

const DATETIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;

describe("GET /api/2/status", () => {
  it("answers with the status object in the full container, without a token", async () => {
    const res = await call("/api/2/status");
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toBe("application/json; charset=utf-8");
    const body = await container(res);
    expect(Object.keys(body)).toEqual([
      "name",
      "version",
      "api",
      "object",
      "type",
      "code",
      "request",
      "debug",
      "meta",
      "error",
      "data",
    ]);
    expect(body).toMatchObject({
      api: 2,
      object: "Status",
      type: "element",
      code: 200,
      request: { limit: 0, remaining: 0, reset: 0 },
      debug: {
        route: { name: "Get status", url: "/api/2/status", controller: "api/status#show" },
        params: { options: {}, where: {} },
      },
      meta: null,
      error: null,
    });
    expect(typeof body.name).toBe("string");
    expect(typeof body.version).toBe("string");
    expect(Object.keys(body.data)).toEqual([
      "oauth",
      "apiVersion",
      "apiRevision",
      "webVersion",
      "webRevision",
      "currentTime",
      "timeZone",
      "block",
      "platform",
    ]);
    expect(body.data).toMatchObject({
      apiVersion: 2,
      apiRevision: "0",
      webVersion: "2.14.0",
      webRevision: "0",
      timeZone: "UTC",
      block: false,
      platform: "up",
    });
    expect(body.data.currentTime).toMatch(DATETIME);
    expect(body.data.oauth.grantTypes.split("|")).toEqual(expect.arrayContaining(["client_credentials", "password"]));
    // The spec's samples' three browser flows, each tested in test/authorize.test.ts and test/e2e.
    expect(body.data.oauth.flows).toBe("redirect|native|webview");
  });

  it("is not counted against any rate limit", async () => {
    const res = await call("/api/2/status");
    expect(res.headers.get("X-RateLimit-Limit")).toBeNull();
  });

  it("serves .json like no suffix", async () => {
    const body = await container(await call("/api/2/status.json"));
    expect(body.object).toBe("Status");
    expect(body.debug.route.url).toBe("/api/2/status");
  });
});

describe("GET /api/2/version", () => {
  it("answers with exactly the version object's fields", async () => {
    const body = await container(await call("/api/2/version"));
    expect(body.object).toBe("Version");
    expect(Object.keys(body.data)).toEqual([
      "apiVersion",
      "apiRevision",
      "webVersion",
      "webRevision",
      "currentTime",
      "timeZone",
    ]);
    expect(body.data).toMatchObject({
      apiVersion: 2,
      apiRevision: "0",
      webVersion: "2.14.0",
      webRevision: "0",
      timeZone: "UTC",
    });
    expect(body.data.currentTime).toMatch(DATETIME);
  });
});

describe("status and version, made once a second (http/container.ts respondSameForSecond)", () => {
  const nowSeconds = () => Math.floor(Date.now() / 1000);
  const currentTime = async (path: string) => (await container(await call(path))).data.currentTime as string;

  it.each(["/api/2/status", "/api/2/version"])(
    "%s shows the current second, and the next one after it",
    async (path) => {
      const before = nowSeconds();
      const first = await currentTime(path);
      expect([before, before + 1].map(formatDatetime)).toContain(first);
      await new Promise((resolve) => setTimeout(resolve, 1_050 - (Date.now() % 1_000)));
      const later = nowSeconds();
      const second = await currentTime(path);
      expect(second).not.toBe(first);
      expect([later, later + 1].map(formatDatetime)).toContain(second);
    },
  );

  it("keeps each route's own answer, and JSONP and signed requests out of it", async () => {
    expect((await container(await call("/api/2/status"))).object).toBe("Status");
    expect((await container(await call("/api/2/version"))).object).toBe("Version");
    const jsonp = await call("/api/2/status.jsonp?callback=shown");
    expect(await jsonp.text()).toMatch(/^\/\*\*\/shown\(\{"name"/);
    expect((await call("/api/2/status?signed=1")).status).toBe(400);
    const json = await call("/api/2/status");
    expect(json.headers.get("Content-Type")).toBe("application/json; charset=utf-8");
    expect((await container(json)).object).toBe("Status");
  });
});

describe("JSONP", () => {
  it("wraps the container in the default callback, served as JavaScript", async () => {
    const res = await call("/api/2/version.jsonp");
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toBe("application/javascript; charset=utf-8");
    expect(res.headers.get("X-Content-Type-Options")).toBe("nosniff");
    const text = await res.text();
    const match = /^\/\*\*\/callback\((.*)\);$/s.exec(text);
    expect(match).not.toBeNull();
    expect(JSON.parse(match![1]!).data.webVersion).toBe("2.14.0");
  });

  it("uses the callback parameter, dotted paths included", async () => {
    const text = await (await call("/api/2/status.jsonp?callback=App.handlers.status_1")).text();
    expect(text.startsWith("/**/App.handlers.status_1({")).toBe(true);
  });

  it.each([
    ["alert(1)//", "alert%281%29%2F%2F"],
    ["a-b", "a-b"],
    ["1abc", "1abc"],
    ["a..b", "a..b"],
    ["<script>", "%3Cscript%3E"],
    ["empty", ""],
    ["too long", "a".repeat(129)],
  ])("rejects a callback that is not an identifier path (%s) without reflecting it", async (_, callback) => {
    const res = await call(`/api/2/status.jsonp?callback=${callback}`);
    expect(res.status).toBe(400);
    expect(res.headers.get("Content-Type")).toBe("application/json; charset=utf-8");
    const text = await res.text();
    if (callback.length > 0) expect(text).not.toContain(decodeURIComponent(callback));
    const body = JSON.parse(text);
    expect(body.code).toBe(400);
    expect(body.error).toMatchObject({ error: "invalid_request", error_code: 400 });
  });

  it.each(["import", "new", "this", "void", "true", "null", "App.import", "a.delete"])(
    "rejects the reserved word in the callback %s",
    async (callback) => {
      const res = await call(`/api/2/status.jsonp?callback=${callback}`);
      expect(res.status).toBe(400);
      expect((await container(res)).error).toMatchObject({ error: "invalid_request", error_code: 400 });
    },
  );

  it("escapes U+2028 and U+2029, which end a line in older scripts", async () => {
    const name = "Line\u2028and paragraph\u2029separators";
    const client = await createClient({ name });
    const res = await call("/api/2/clients.jsonp?callback=cb", { headers: bearer(await serverToken(client)) });
    const text = await res.text();
    expect(text).not.toMatch(/[\u2028\u2029]/);
    expect(text).toContain("Line\\u2028and paragraph\\u2029separators");
    expect(JSON.parse(/^\/\*\*\/cb\((.*)\);$/s.exec(text)![1]!).data[client.id].name).toBe(name);
  });

  it("delivers errors to the callback with status 200 and the real code in the container", async () => {
    const res = await call("/api/2/clients.jsonp?callback=cb");
    expect(res.status).toBe(200);
    const text = await res.text();
    const body = JSON.parse(/^\/\*\*\/cb\((.*)\);$/s.exec(text)![1]!);
    expect(body.code).toBe(401);
    expect(body.error.error).toBe("invalid_token");
  });
});

describe("JSONP errors", () => {
  it("reports a wrong method as 405, with the real code in the container", async () => {
    const res = await call("/api/2/status.jsonp?callback=cb", { method: "POST" });
    expect(res.status).toBe(200);
    expect(res.headers.get("Allow")).toContain("GET");
    const body = JSON.parse(/^\/\*\*\/cb\((.*)\);$/s.exec(await res.text())![1]!);
    expect(body.code).toBe(405);
    expect(body.error).toMatchObject({ error: "invalid_request", error_code: 405 });
  });

  it("reports an unknown path as 404 to the callback", async () => {
    const res = await call("/api/2/nothing.jsonp?callback=cb");
    expect(res.status).toBe(200);
    const body = JSON.parse(/^\/\*\*\/cb\((.*)\);$/s.exec(await res.text())![1]!);
    expect(body.code).toBe(404);
  });
});

describe("formats, paths and methods", () => {
  it("refuses an unsupported format suffix with 406", async () => {
    const res = await call("/api/2/status.xml");
    expect(res.status).toBe(406);
    const body = await container(res);
    expect(body.error).toMatchObject({ error: "invalid_request", error_code: 406 });
    expect(body.data).toBeNull();
  });

  it("never echoes an unsupported format suffix, however long", async () => {
    const suffix = "A".repeat(5000);
    const res = await call(`/api/2/version.${suffix}`);
    expect(res.status).toBe(406);
    const text = await res.text();
    expect(JSON.parse(text).error.error_description).not.toContain("AAAA");
    expect(text.length).toBeLessThan(1000);
  });

  it("shows at most 256 characters of an unknown path", async () => {
    const res = await call(`/api/2/${"x".repeat(20_000)}`);
    expect(res.status).toBe(404);
    const text = await res.text();
    expect(text.length).toBeLessThan(1000);
    expect(JSON.parse(text).debug.route.url).toBe(`/api/2/${"x".repeat(249)}`);
  });

  it("marks every response nosniff, the bare OAuth ones and the key set included", async () => {
    const responses = await Promise.all([
      call("/oauth/token"),
      call("/oauth/jwks"),
      call("/.well-known/jwks.json"),
      call("/nowhere"),
      postForm("/oauth/token", { grant_type: "client_credentials" }, basicAuth(webClient.id, webClient.secret)),
      postForm("/oauth/token", { grant_type: "client_credentials" }, basicAuth(webClient.id, "wrong secret")),
      call("/api/2/status"),
    ]);
    for (const res of responses) expect(res.headers.get("X-Content-Type-Options")).toBe("nosniff");
    expect(responses.map((res) => res.status)).toEqual([405, 200, 200, 404, 200, 401, 200]);
  });

  it("answers an unknown API path with 404 in the container", async () => {
    const res = await call("/api/2/nothing-here");
    expect(res.status).toBe(404);
    const body = await container(res);
    expect(body).toMatchObject({
      code: 404,
      object: "Error",
      error: { error: "invalid_request", error_code: 404, type: "ApiException" },
    });
  });

  it("answers an unsupported API version with 404 naming the supported one", async () => {
    const body = await container(await call("/api/1/status"));
    expect(body.code).toBe(404);
    expect(body.error!.error_description).toContain("/api/2");
  });

  it("answers a wrong method with 405 and an Allow header", async () => {
    const res = await call("/api/2/status", { method: "POST" });
    expect(res.status).toBe(405);
    expect(res.headers.get("Allow")).toContain("GET");
    expect((await container(res)).error!.error_code).toBe(405);
  });

  it("answers HEAD like GET without a body, and OPTIONS with 405 and Allow", async () => {
    const head = await call("/api/2/status", { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("Content-Type")).toBe("application/json; charset=utf-8");
    expect(await head.text()).toBe("");
    const options = await call("/api/2/status", { method: "OPTIONS" });
    expect(options.status).toBe(405);
    expect(options.headers.get("Allow")).toBe("GET, HEAD");
    expect((await container(options)).error!.error_code).toBe(405);
  });

  it("answers a wrong method on /oauth/token with a bare 405 error body", async () => {
    const res = await call("/oauth/token");
    expect(res.status).toBe(405);
    expect(await res.json()).toMatchObject({ error: "invalid_request", error_code: 405 });
  });

  it("answers unknown paths outside the API with a bare 404 error body", async () => {
    const res = await call("/nowhere");
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({
      error: "invalid_request",
      error_code: 404,
      type: "ApiException",
      error_description: "No endpoint at this path",
    });
  });
});

describe("the request's path, read without parsing its URL (http/format.ts)", () => {
  it("is the parsed URL's pathname for any URL the runtime serializes", () => {
    fc.assert(
      fc.property(fc.webUrl({ withQueryParameters: true, withFragments: true }), (raw) => {
        const url = new Request(raw).url;
        expect(pathnameOf(url)).toBe(new URL(url).pathname);
      }),
      { numRuns: 500 },
    );
  });
});

describe("datetimes as the API writes them (http/datetime.ts)", () => {
  it("are the ISO form's first 19 characters with a space, for every second a datetime can hold", () => {
    fc.assert(
      fc.property(fc.integer({ min: -100 * 365 * 86_400, max: LAST_SECOND + 86_400 }), (seconds) => {
        expect(formatDatetime(seconds)).toBe(new Date(seconds * 1000).toISOString().slice(0, 19).replace("T", " "));
      }),
      { numRuns: 2_000 },
    );
    expect(formatDatetime(0)).toBe("1970-01-01 00:00:00");
    expect(formatDatetime(LAST_SECOND)).toBe("9999-12-31 23:59:59");
  });
});
