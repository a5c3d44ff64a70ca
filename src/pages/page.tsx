/**
 * The frame of every browser page: localized, usable on a phone, no script, and a strict
 * Content-Security-Policy that allows exactly the page's own style sheet.
 */
import type { Context } from "hono";
import type { Child } from "hono/jsx";
import type { AppEnv } from "../env";
import { inlineStyleSource } from "../http/content-security";
import { htmlLang, type Locale } from "./locale";

const STYLE =
  "body{font:1rem/1.5 system-ui,sans-serif;max-width:32rem;margin:0 auto;padding:1.5rem;color:#1a1a1a}" +
  "h1{font-size:1.5rem;margin:0 0 1rem}";

export type PageOptions = {
  /** Whether another site may frame the page (the webview entry); never for anything else. */
  frameable?: boolean;
};

/** Renders a page with its security headers; pages never go to caches or carry a referrer. */
export async function renderPage(
  c: Context<AppEnv>,
  status: 200 | 400 | 410,
  page: { locale: Locale; title: string; body: Child },
  { frameable = false }: PageOptions = {},
): Promise<Response> {
  const csp = [
    "default-src 'none'",
    `style-src ${await inlineStyleSource(STYLE)}`,
    "base-uri 'none'",
    "form-action 'self'",
    ...(frameable ? [] : ["frame-ancestors 'none'"]),
  ].join("; ");
  const document = (
    <html lang={htmlLang(page.locale)}>
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{page.title}</title>
        <style dangerouslySetInnerHTML={{ __html: STYLE }} />
      </head>
      <body>
        <main>
          <h1>{page.title}</h1>
          {page.body}
        </main>
      </body>
    </html>
  );
  return c.html(`<!doctype html>${await document.toString()}`, status, {
    "Content-Security-Policy": csp,
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    ...(frameable ? {} : { "X-Frame-Options": "DENY" }),
  });
}
