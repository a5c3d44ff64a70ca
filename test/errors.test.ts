import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { HTTPException } from "hono/http-exception";
import { describe, expect, it, vi } from "vitest";
import { ApiError, OAuthError, toApiError } from "../src/errors";
import worker from "../src/index";
import { BASE, bearer, serverToken } from "./helpers/http";

describe("the error model", () => {
  it("turns an unexpected error into a generic 500 and logs it", () => {
    const log = vi.spyOn(console, "error").mockImplementation(() => {});
    const err = toApiError(new TypeError("secret internal detail at db.ts:42"));
    expect(err.status).toBe(500);
    expect(err.body).toEqual({
      error: "server_error",
      error_code: 500,
      type: "ApiException",
      error_description: "Internal server error",
    });
    expect(JSON.stringify(err.body)).not.toContain("internal detail");
    expect(log).toHaveBeenCalledOnce();
    log.mockRestore();
  });

  it("keeps typed errors as they are", () => {
    const err = new OAuthError(401, "invalid_token", "The access token is invalid");
    expect(toApiError(err)).toBe(err);
    expect(err.body.type).toBe("OAuthException");
    expect(new ApiError(404, "invalid_request", "x").body.type).toBe("ApiException");
  });

  it("maps Hono's client errors to invalid_request without their message", () => {
    const err = toApiError(new HTTPException(400, { message: "Malformed JSON in request body" }));
    expect(err.body).toMatchObject({
      error: "invalid_request",
      error_code: 400,
      error_description: "Malformed request",
    });
  });
});

describe("a failure behind a request", () => {
  // A misconfigured secret is a 503 of its own (test/configuration.test.ts); a broken binding is not.
  it("answers a generic 500 in the container, and logs the cause without the token", async () => {
    const token = await serverToken();
    const log = vi.spyOn(console, "error").mockImplementation(() => {});
    const unreachable = () => {
      throw new Error("D1 unreachable at 10.0.0.7");
    };
    const broken = { ...env, DB: { prepare: unreachable, withSession: unreachable } as unknown as D1Database };
    const res = await worker.fetch(
      new Request(`${BASE}/api/2/clients`, { headers: bearer(token) }),
      broken,
      createExecutionContext(),
    );
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject({
      code: 500,
      error: { error: "server_error", error_code: 500, error_description: "Internal server error" },
      data: null,
    });
    expect(text).not.toMatch(/unreachable|10\.0\.0\.7|at /);
    expect(log).toHaveBeenCalled();
    expect(JSON.stringify(log.mock.calls)).not.toContain(token);
    log.mockRestore();
  });
});
