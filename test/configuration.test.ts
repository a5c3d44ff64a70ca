/**
 * Misconfiguration (src/configuration.ts): a missing or wrong secret shows on /api/2/status, is
 * logged once, and makes exactly the endpoints that need it answer 503. Each case runs the Worker
 * with a changed env; verdicts are kept per secret value, so a case that counts log lines uses a
 * value of its own.
 */
import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { generateDataProtectionKey, generateSigningKeys } from "../scripts/lib/keys";
import { openDatabase } from "../src/db/client";
import { buildImportStatements } from "../src/db/import";
import * as schema from "../src/db/schema";
import type { Bindings } from "../src/env";
import worker from "../src/index";
import { importFileSchema } from "../src/schemas/import";
import { keyFingerprint } from "../src/security/data-protection";
import { BASE, basicAuth, bearer, type Container, serverToken, userToken, webClient } from "./helpers/http";
import { checkAgainstDocument } from "./helpers/openapi";
import { createClient } from "./helpers/seed";

type Env = Omit<Bindings, "TOKEN_SIGNING_KEYS" | "DATA_PROTECTION_KEY"> & {
  TOKEN_SIGNING_KEYS: string | undefined;
  DATA_PROTECTION_KEY: string | undefined;
};

/** A request through the Worker with `changed` env, its response checked against the OpenAPI document. */
async function callWith(changed: Partial<Env>, path: string, init: RequestInit = {}): Promise<Response> {
  const request = new Request(`${BASE}${path}`, init);
  const response = await worker.fetch(request.clone(), { ...env, ...changed } as Bindings, createExecutionContext());
  await checkAgainstDocument(request, response);
  return response;
}

function tokenRequest(changed: Partial<Env>, client: { id: string; secret: string }): Promise<Response> {
  return callWith(changed, "/oauth/token", {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", ...basicAuth(client.id, client.secret) },
    body: "grant_type=client_credentials",
  });
}

async function status(changed: Partial<Env>) {
  const res = await callWith(changed, "/api/2/status");
  expect(res.status).toBe(200);
  return ((await res.json()) as Container).data as { platform: string; problems?: string[] };
}

/** The documented error body of a 503 for `problem`, bare (OAuth) or in the container (API). */
async function expectMisconfigured(res: Response, problem: string): Promise<void> {
  expect(res.status, await res.clone().text()).toBe(503);
  expect(res.headers.get("Retry-After")).toBe("300");
  const body = (await res.json()) as Record<string, unknown>;
  const description = `The service is misconfigured: ${problem}`;
  const error = {
    error: "temporarily_unavailable",
    error_code: 503,
    type: "ApiException",
    error_description: description,
  };
  if ("error_code" in body) expect(body).toEqual(error);
  else expect((body as unknown as Container).error).toEqual({ ...error, code: 503, description });
}

/** What console.error was given, as one text per call. */
function errorLog(): { lines: () => string[] } {
  const spy = vi.spyOn(console, "error").mockImplementation(() => {});
  return { lines: () => spy.mock.calls.map((args) => args.map(String).join(" ")) };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("TOKEN_SIGNING_KEYS missing or malformed", () => {
  const unset = { TOKEN_SIGNING_KEYS: undefined };

  it("shows on /api/2/status as platform misconfigured, with the problem, never as up", async () => {
    expect(await status(unset)).toMatchObject({
      platform: "misconfigured",
      problems: ["TOKEN_SIGNING_KEYS is not set"],
    });
  });

  it("answers 503 at the token endpoint, both key sets and with a token on the API; 200 where no secret is needed", async () => {
    const token = await serverToken();
    const problem = "TOKEN_SIGNING_KEYS is not set";
    await expectMisconfigured(await tokenRequest(unset, await createClient()), problem);
    await expectMisconfigured(await callWith(unset, "/.well-known/jwks.json"), problem);
    await expectMisconfigured(await callWith(unset, "/oauth/jwks"), problem);
    const api = await callWith(unset, "/api/2/clients", { headers: bearer(token) });
    expect(api.headers.get("Content-Type")).toBe("application/json; charset=utf-8");
    await expectMisconfigured(api, problem);
    for (const path of ["/api/2/version", "/api/2/openapi.json", "/.well-known/oauth-authorization-server"]) {
      expect((await callWith(unset, path)).status, path).toBe(200);
    }
  });

  it("is logged once per isolate, never quoting the secret, and never shown in a response", async () => {
    const nonce = crypto.randomUUID();
    const malformed = { TOKEN_SIGNING_KEYS: `not json ${nonce}` };
    const log = errorLog();
    const problem = "TOKEN_SIGNING_KEYS is not JSON";
    const texts: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await callWith(malformed, "/oauth/jwks");
      texts.push(await res.clone().text());
      await expectMisconfigured(res, problem);
    }
    expect(await status(malformed)).toMatchObject({ problems: [problem] });
    expect(log.lines().filter((line) => line.includes("TOKEN_SIGNING_KEYS"))).toHaveLength(1);
    expect(log.lines()).toHaveLength(1);
    expect([...log.lines(), ...texts].join("\n")).not.toContain(nonce);
  });

  it("names keys that are JSON but no array of private keys", async () => {
    const publicOnly = JSON.stringify([{ kty: "OKP", crv: "Ed25519", x: "AAAA", kid: crypto.randomUUID() }]);
    const problem = "TOKEN_SIGNING_KEYS must be a JSON array of private JWKs, each with a kid";
    expect(await status({ TOKEN_SIGNING_KEYS: publicOnly })).toMatchObject({ problems: [problem] });
    await expectMisconfigured(await callWith({ TOKEN_SIGNING_KEYS: publicOnly }, "/oauth/jwks"), problem);
  });

  it("names a ring with a published key that is not valid, or a signing key whose halves differ", async () => {
    const problem = "TOKEN_SIGNING_KEYS holds a key whose private or public half is not valid";
    const [[first, rsa], [second, otherRsa]] = [
      JSON.parse(await generateSigningKeys()),
      JSON.parse(await generateSigningKeys()),
    ] as [{ x: string; n: string }[], { x: string; n: string }[]];
    const brokenSecond = JSON.stringify([first, rsa, { ...second, x: "AAAA" }]);
    expect(await status({ TOKEN_SIGNING_KEYS: brokenSecond })).toMatchObject({ problems: [problem] });
    const mismatched = JSON.stringify([{ ...first, x: second!.x }, rsa]);
    expect(await status({ TOKEN_SIGNING_KEYS: mismatched })).toMatchObject({ problems: [problem] });
    await expectMisconfigured(await callWith({ TOKEN_SIGNING_KEYS: mismatched }, "/oauth/jwks"), problem);
    const mismatchedRsa = JSON.stringify([first, { ...rsa, n: otherRsa!.n }]);
    expect(await status({ TOKEN_SIGNING_KEYS: mismatchedRsa })).toMatchObject({ problems: [problem] });
  });

  it("names a ring without a key of each algorithm, or with a key of another kind", async () => {
    const [ed25519, rsa] = JSON.parse(await generateSigningKeys()) as object[];
    const problem = "TOKEN_SIGNING_KEYS needs an Ed25519 key (access tokens) and an RSA key (ID tokens)";
    expect(await status({ TOKEN_SIGNING_KEYS: JSON.stringify([ed25519]) })).toMatchObject({ problems: [problem] });
    expect(await status({ TOKEN_SIGNING_KEYS: JSON.stringify([rsa]) })).toMatchObject({ problems: [problem] });
    const other = "TOKEN_SIGNING_KEYS holds a key that is neither Ed25519 (EdDSA) nor RSA (RS256)";
    const p256 = { kty: "EC", crv: "P-256", x: "AAAA", y: "AAAA", d: "AAAA", kid: "ec" };
    expect(await status({ TOKEN_SIGNING_KEYS: JSON.stringify([ed25519, rsa, p256]) })).toMatchObject({
      problems: [other],
    });
    const lying = { ...rsa, alg: "EdDSA" };
    expect(await status({ TOKEN_SIGNING_KEYS: JSON.stringify([ed25519, lying]) })).toMatchObject({
      problems: [other],
    });
  });
});

describe("DATA_PROTECTION_KEY missing or malformed", () => {
  const unset = { DATA_PROTECTION_KEY: undefined };

  it("shows on status, answers 503 at the token endpoint and the login page, while the API's tokens still work", async () => {
    expect(await status(unset)).toMatchObject({
      platform: "misconfigured",
      problems: ["DATA_PROTECTION_KEY is not set"],
    });
    const token = await serverToken();
    await expectMisconfigured(await tokenRequest(unset, await createClient()), "DATA_PROTECTION_KEY is not set");
    const authorizeQuery = new URLSearchParams({
      response_type: "code",
      client_id: webClient.id,
      redirect_uri: webClient.redirectUris[0]!,
    });
    // A person's browser gets a page that says try again; the problem is for the operator's log.
    const login = await callWith(unset, `/oauth/authorize?${authorizeQuery}`);
    expect(login.status).toBe(503);
    expect(login.headers.get("Retry-After")).toBe("300");
    expect(login.headers.get("Content-Type")).toMatch(/^text\/html/);
    const page = await login.text();
    expect(page).toContain("We could not finish this just now");
    expect(page).not.toContain("DATA_PROTECTION_KEY");
    // A signed answer needs the client's sealed signing secret; a plain one needs no key of this kind.
    expect((await callWith(unset, "/api/2/clients", { headers: bearer(token) })).status).toBe(200);
    await expectMisconfigured(
      await callWith(unset, "/api/2/me?signed=1", { headers: bearer(await userToken()) }),
      "DATA_PROTECTION_KEY is not set",
    );
  });

  it("names a key that is too short", async () => {
    const short = { DATA_PROTECTION_KEY: "c2hvcnQ" };
    const problem = "DATA_PROTECTION_KEY must be at least 32 bytes, base64url-encoded";
    expect(await status(short)).toMatchObject({ platform: "misconfigured", problems: [problem] });
    await expectMisconfigured(await tokenRequest(short, await createClient()), problem);
  });

  it("lists both problems when both secrets are missing", async () => {
    expect(await status({ TOKEN_SIGNING_KEYS: undefined, DATA_PROTECTION_KEY: undefined })).toMatchObject({
      platform: "misconfigured",
      problems: ["TOKEN_SIGNING_KEYS is not set", "DATA_PROTECTION_KEY is not set"],
    });
  });
});

describe("DATA_PROTECTION_KEY other than the database's", () => {
  const mismatch = "DATA_PROTECTION_KEY is not the key the database's data was imported under";

  it("shows on status and answers 503 instead of failing every client's authentication", async () => {
    const other = { DATA_PROTECTION_KEY: generateDataProtectionKey() };
    const log = errorLog();
    expect(await status(other)).toMatchObject({ platform: "misconfigured", problems: [mismatch] });
    const client = await createClient();
    await expectMisconfigured(await tokenRequest(other, client), mismatch);
    await expectMisconfigured(await tokenRequest(other, client), mismatch);
    expect(log.lines()).toEqual([expect.stringContaining(mismatch)]);
    // The same client with the database's key.
    expect((await tokenRequest({}, client)).status).toBe(200);
  });

  it("keeps the endpoints that need no data-protection key working", async () => {
    const other = { DATA_PROTECTION_KEY: generateDataProtectionKey() };
    const token = await serverToken();
    await expectMisconfigured(await tokenRequest(other, await createClient()), mismatch);
    expect((await callWith(other, "/api/2/clients", { headers: bearer(token) })).status).toBe(200);
    expect((await callWith(other, "/oauth/jwks")).status).toBe(200);
  });
});

describe("the data-protection key's fingerprint in D1", () => {
  const db = () => openDatabase(env.DB);

  it("is recorded by the import, as the key's fingerprint", async () => {
    const [row] = await db().select().from(schema.keyFingerprints);
    expect(row).toMatchObject({
      name: "DATA_PROTECTION_KEY",
      fingerprint: await keyFingerprint(env.DATA_PROTECTION_KEY),
    });
    expect(row!.fingerprint).not.toContain(env.DATA_PROTECTION_KEY);
  });

  it("refuses a whole import under another key, writing nothing", async () => {
    const file = importFileSchema.parse({ merchants: [{ merchantId: 4242, name: "Other Key" }] });
    const statements = await buildImportStatements(db(), file, generateDataProtectionKey());
    await expect(db().batch(statements as [never])).rejects.toThrow(/another DATA_PROTECTION_KEY/);
    expect(await db().select().from(schema.merchants).where(eq(schema.merchants.id, 4242)).get()).toBeUndefined();
    const rows = await db().select().from(schema.keyFingerprints);
    expect(rows.map((row) => row.fingerprint)).toEqual([await keyFingerprint(env.DATA_PROTECTION_KEY)]);
  });

  it("is proved by a client's sealed signing secret where none was recorded, and recorded then", async () => {
    // A database imported before migration 0011: clients, one with a sealed signing secret, and no fingerprint.
    await createClient({ signingSecret: "a signing secret long enough" });
    await db().delete(schema.keyFingerprints);
    const other = generateDataProtectionKey();
    expect(await status({ DATA_PROTECTION_KEY: other })).toEqual(
      expect.objectContaining({
        platform: "misconfigured",
        problems: ["DATA_PROTECTION_KEY is not the key the database's data was imported under"],
      }),
    );
    expect(await db().select().from(schema.keyFingerprints)).toEqual([]);
    // The Worker's own key, spelled with its base64 padding: a value this isolate has no verdict on yet.
    expect(await status({ DATA_PROTECTION_KEY: `${env.DATA_PROTECTION_KEY}=` })).toEqual(
      expect.objectContaining({ platform: "up" }),
    );
    const rows = await db().select().from(schema.keyFingerprints);
    expect(rows.map((row) => row.fingerprint)).toEqual([await keyFingerprint(env.DATA_PROTECTION_KEY)]);
  });
});
