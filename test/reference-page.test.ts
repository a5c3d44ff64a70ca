import { describe, expect, it } from "vitest";
import { call, webClient } from "./helpers/http";
import { createClient } from "./helpers/seed";

/** The `'sha256-…'` sources of the policy's style-src, in order. */
function styleHashes(policy: string): string[] {
  const styleSrc = policy.split(";").find((directive) => directive.trim().startsWith("style-src"));
  return [...(styleSrc ?? "").matchAll(/'sha256-([A-Za-z0-9+/]+=*)'/g)].map(([, hash]) => hash!);
}

/** The base64 SHA-256 of each <style> element's exact text, as a browser hashes it (CSP3 §8.4). */
async function styleElementHashes(page: string): Promise<string[]> {
  const styles = [...page.matchAll(/<style>([\s\S]*?)<\/style>/g)].map(([, text]) => text!);
  return Promise.all(
    styles.map(async (text) => {
      const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
      return btoa(String.fromCharCode(...new Uint8Array(digest)));
    }),
  );
}

async function expectStylesAllowed(path: string) {
  const res = await call(path, { redirect: "manual" });
  expect(res.headers.get("Content-Type")).toMatch(/^text\/html/);
  const allowed = styleHashes(res.headers.get("Content-Security-Policy")!);
  const emitted = await styleElementHashes(await res.text());
  expect(emitted.length).toBeGreaterThan(0);
  expect(allowed).toEqual(emitted);
}

function authorizePath(clientId: string, redirectUri: string) {
  const params = new URLSearchParams({ client_id: clientId, redirect_uri: redirectUri, response_type: "code" });
  return `/oauth/authorize?${params}`;
}

describe("the style-src hashes of the HTML pages", () => {
  it("allow the API reference page's own style sheet, exactly as it is emitted", async () => {
    await expectStylesAllowed("/api/2/reference");
  });

  it.each([
    ["the login page", authorizePath(webClient.id, webClient.redirectUris[0]!)],
    ["the error page", "/oauth/authorize?client_id=nobody"],
    ["the webview's page", "/oauth/webview?code=not-a-code"],
    ["the signed-out page", "/oauth/logout"],
    ["the sign-in link's page", "/oauth/signin?token=not-a-token"],
  ])("allow %s's style sheet, exactly as it is emitted", async (_, path) => {
    await expectStylesAllowed(path);
  });

  it("allow a client's own style sheet after ours", async () => {
    const callback = "https://test.example/callback";
    const client = await createClient({
      redirectUris: [callback],
      grantTypes: ["authorization_code"],
      css: { color: "#222", h1: { "font-family": '"Fjord Sans", serif' } },
    });
    await expectStylesAllowed(authorizePath(client.id, callback));
  });
});
