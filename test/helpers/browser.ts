/**
 * A browser for the login pages, through the Worker's real fetch: it keeps cookies as a browser
 * does (by name, removed by Max-Age=0), follows nothing (each redirect is looked at), and reads
 * the forms the pages render.
 */
import { expect } from "vitest";
import { PASSKEY_SCRIPT } from "../../src/pages/passkey-script";
import { call } from "./http";

/** How a browser's requests reach the Worker: `call`, or a faulty env's fetch (helpers/faults.ts). */
type Transport = (path: string, init: RequestInit) => Promise<Response>;

export class Browser {
  constructor(
    private readonly headers: Record<string, string> = {},
    readonly cookies = new Map<string, string>(),
    private readonly transport: Transport = call,
  ) {}

  /** This browser, its cookies shared, making its requests through `transport`. */
  via(transport: Transport): Browser {
    return new Browser(this.headers, this.cookies, transport);
  }

  async get(path: string, headers: Record<string, string> = {}): Promise<Response> {
    return this.keep(await this.transport(path, { headers: this.request(headers), redirect: "manual" }));
  }

  async post(path: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
    return this.postBody(path, new URLSearchParams(fields).toString(), headers);
  }

  /** Posts a form body as it is given, bytes that no URLSearchParams would write among them. */
  async postBody(path: string, body: string | Uint8Array, headers: Record<string, string> = {}): Promise<Response> {
    return this.keep(
      await this.transport(path, {
        method: "POST",
        headers: this.request({ "Content-Type": "application/x-www-form-urlencoded", ...headers }),
        body,
        redirect: "manual",
      }),
    );
  }

  /** Submits the page's form as it is, with `fields` filled in (a button's name and value among them). */
  async submit(page: string, fields: Record<string, string>, path = formAction(page)): Promise<Response> {
    return this.post(path, { ...hiddenFields(page), ...fields });
  }

  private request(headers: Record<string, string>): Record<string, string> {
    const cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
    return { ...this.headers, ...(cookie && { Cookie: cookie }), ...headers };
  }

  private keep(res: Response): Response {
    for (const header of res.headers.getSetCookie()) {
      const [pair = "", ...attributes] = header.split(";").map((part) => part.trim());
      const [name = "", value = ""] = pair.split(/=(.*)/s);
      if (attributes.some((a) => /^max-age=0$/i.test(a)) || value === "") this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return res;
  }
}

/** The hidden fields of the page's form, as a browser would post them. */
export function hiddenFields(page: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const [, name, value] of page.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"\/?>/g)) {
    fields[name!] = decodeEntities(value!);
  }
  return fields;
}

export function formAction(page: string): string {
  return /<form method="post" action="([^"]+)"/.exec(page)![1]!;
}

function decodeEntities(text: string): string {
  return text
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");
}

/**
 * A browser page: HTML, never cached, framing refused unless `frameable`, and no script but the
 * passkey script (src/pages/passkey-script.ts), once, inline, allowed by its hash alone.
 */
export async function expectPage(res: Response, status: number, title: string, { frameable = false } = {}) {
  expect(res.status).toBe(status);
  expect(res.headers.get("Content-Type")).toContain("text/html");
  expect(res.headers.get("Cache-Control")).toBe("no-store");
  expect(res.headers.get("Referrer-Policy")).toBe("no-referrer");
  const csp = res.headers.get("Content-Security-Policy")!;
  expect(csp).toContain("default-src 'none'");
  expect(csp).toContain("form-action 'self'");
  if (!frameable) expect(csp).toContain("frame-ancestors 'none'");
  const body = await res.text();
  expect(body).toMatch(/^<!doctype html>/);
  expect(body).toContain(`<h1>${title}</h1>`);
  const scripts = [...body.matchAll(/<script\b[^>]*>([\s\S]*?)<\/script>/g)];
  if (scripts.length === 0) {
    expect(csp).not.toContain("script-src");
  } else {
    expect(scripts).toHaveLength(1);
    expect(scripts[0]![0].startsWith("<script>")).toBe(true);
    expect(decodeEntities(scripts[0]![1]!)).toBe(PASSKEY_SCRIPT);
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(PASSKEY_SCRIPT));
    const source = `'sha256-${btoa(String.fromCharCode(...new Uint8Array(digest)))}'`;
    expect(csp.split("; ")).toContain(`script-src ${source}`);
  }
  return body;
}

/** The query parameters of a redirect's Location. */
export function redirectParameters(res: Response): { base: string; params: URLSearchParams } {
  expect(res.status).toBe(303);
  const location = new URL(res.headers.get("Location")!);
  const base = `${location.origin}${location.pathname}`;
  return { base, params: location.searchParams };
}
