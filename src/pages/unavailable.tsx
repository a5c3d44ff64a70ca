/** The browser flows' 503: the platform failed or the service is misconfigured; the person tries again. */
import type { Context } from "hono";
import type { AppEnv } from "../env";
import type { TryAgainLater } from "../errors";
import { isForm } from "../http/media-type";
import { pageLocale } from "./locale";
import { MESSAGES } from "./messages";
import { renderPage, sameAddressIn } from "./page";

/** The pages a person's browser opens (their 503 is a page, not a JSON body). */
const BROWSER_PAGES = new Set(["/oauth/authorize", "/oauth/signin", "/oauth/webview", "/oauth/logout", "/logout"]);

export const isBrowserPage = (path: string) => BROWSER_PAGES.has(path) || path.startsWith("/flow/");

/** A localized "try again" page with the error's Retry-After, in the locale the page was asked in. */
export async function renderUnavailablePage(c: Context<AppEnv>, err: TryAgainLater): Promise<Response> {
  // A form was read before anything ran (middleware/request.ts): this reads its cache.
  const form = isForm(c.req.header("Content-Type")) ? await c.req.formData() : null;
  const requested = c.req.query("locale") ?? form?.get("locale");
  const locale = pageLocale(typeof requested === "string" ? requested : undefined, c.req.header("Accept-Language"));
  const text = MESSAGES[locale].unavailable;
  return renderPage(
    c,
    503,
    { locale, title: text.title, body: <p>{text.text}</p> },
    { headers: err.headers, languages: sameAddressIn(c) },
  );
}
