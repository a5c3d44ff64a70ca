/**
 * The frame of every browser page: localized, usable on a phone, and a strict
 * Content-Security-Policy that allows exactly the page's own style sheet and, on the pages that
 * offer passkeys, the one script (pages/passkey-script.ts), each by its hash.
 */
import type { Context } from "hono";
import type { Child } from "hono/jsx";
import type { AppEnv } from "../env";
import { inlineSource } from "../http/content-security";
import { PASSKEY_SCRIPT } from "./passkey-script";
import { htmlLang, type Locale, LOCALES } from "./locale";
import { MESSAGES } from "./messages";

/** What went wrong, announced to screen readers (role=alert); nothing without a text. */
export function Alert({ text }: { text?: string | undefined }) {
  return text ? (
    <p class="alert" role="alert">
      {text}
    </p>
  ) : null;
}

/**
 * The field of a second factor's code (an authenticator's, or a recovery code, so not numeric
 * alone), which phones and password managers fill in as a one-time code.
 */
export function CodeInput({ label, hint }: { label: string; hint?: string | undefined }) {
  return (
    <>
      <label for="code">{label}</label>
      <input
        id="code"
        name="code"
        type="text"
        autocomplete="one-time-code"
        autocapitalize="none"
        spellcheck={false}
        aria-describedby={hint ? "code-hint" : undefined}
        required
      />
      {hint && (
        <p id="code-hint" class="hint">
          {hint}
        </p>
      )}
    </>
  );
}

/** The way back to the client from a page where its flow ended, when there is one. */
export function WayBack({ locale, back }: { locale: Locale; back?: { href: string; client: { name: string } } }) {
  return back ? (
    <p>
      <a href={back.href}>{MESSAGES[locale].backTo(back.client.name)}</a>
    </p>
  ) : null;
}

/** Each locale's name in its own language. */
const LANGUAGE_NAMES: Record<Locale, string> = { en_US: "English", nb_NO: "Norsk", sv_SE: "Svenska" };

/** Links to the same page in the other locales, each named in its own language. */
function LanguageSwitch({ locale, href }: { locale: Locale; href: (locale: Locale) => string }) {
  return (
    <nav class="languages" aria-label={MESSAGES[locale].language}>
      <ul>
        {LOCALES.map((other) => (
          <li lang={htmlLang(other)}>
            {other === locale ? (
              <span aria-current="page">{LANGUAGE_NAMES[other]}</span>
            ) : (
              <a href={href(other)} hreflang={htmlLang(other)}>
                {LANGUAGE_NAMES[other]}
              </a>
            )}
          </li>
        ))}
      </ul>
    </nav>
  );
}

/**
 * The language switch of a page that a GET answered: the same address in another locale. None for
 * a page that answers a form post, which a link cannot send again, nor for an address with an
 * `id_token_hint`: a link never carries an ID token on, and one without it would be another
 * request (a sign-out no longer proven, an authorization request no longer bound to its user).
 */
export function sameAddressIn(c: Context<AppEnv>): ((locale: Locale) => string) | undefined {
  if (c.req.method !== "GET") return undefined;
  const url = new URL(c.req.url);
  if (url.searchParams.has("id_token_hint")) return undefined;
  return (locale) => {
    url.searchParams.set("locale", locale);
    // One leading slash: `//host` would be read as another site's address.
    return `/${url.pathname.replace(/^\/+/, "")}${url.search}`;
  };
}

const STYLE =
  "body{font:1rem/1.5 system-ui,sans-serif;max-width:32rem;margin:0 auto;padding:1.5rem;color:#1a1a1a}" +
  "h1{font-size:1.5rem;margin:0 0 1rem}" +
  "label{display:block;margin:1rem 0 .25rem;font-weight:600}" +
  "input[type=text],input[type=password],input[type=date],select{box-sizing:border-box;width:100%;font:inherit;padding:.6rem;border:1px solid #555;border-radius:.25rem;background:#fff;color:inherit}" +
  "button{font:inherit;padding:.6rem 1.2rem;margin:1rem .5rem 0 0;border:1px solid #1a1a1a;border-radius:.25rem;background:#1a1a1a;color:#fff}" +
  "button.secondary{background:#fff;color:#1a1a1a}" +
  ".check{display:flex;gap:.5rem;align-items:center;font-weight:400}" +
  ".alert{border-left:4px solid #b00020;padding:.5rem 1rem;background:#fdecee}" +
  ".logo{display:block;max-width:12rem;max-height:3rem;margin:0 0 1rem}" +
  ".hint{font-size:.9rem;color:#444}" +
  ".qr svg{display:block;width:12rem;height:12rem}" +
  ".key{word-spacing:.25rem;font-size:1.05rem}" +
  ".codes{columns:2;font-size:1.05rem;padding-left:1.25rem}" +
  "button.link{border:0;background:none;color:#0b57d0;text-decoration:underline;padding:0}" +
  "a{color:#0b57d0}" +
  ".languages{display:flex;gap:1rem;justify-content:flex-end;margin:0 0 1rem;font-size:.9rem}" +
  ".languages ul{display:flex;gap:1rem;list-style:none;margin:0;padding:0}";

export type PageOptions = {
  /** Whether another site may frame the page (the webview entry); never for anything else. */
  frameable?: boolean;
  /** The client's own style sheet (pages/client-style.ts), after ours. */
  clientStyle?: string;
  /**
   * Where the page's form may end up: browsers hold the redirect after a form post to
   * `form-action` too, so the registered URIs the answer may redirect to are listed (as origins).
   */
  redirectsTo?: string[];
  /** The client's logo (its registered `logo_uri`): the one image the page may load, from there alone. */
  logo?: string | null;
  /** Whether the page offers passkeys, and so carries their script. */
  passkeys?: boolean;
  /** The same page in another locale: the language switch's links. */
  languages?: ((locale: Locale) => string) | undefined;
  headers?: Record<string, string>;
};

export type PageStatus = 200 | 400 | 401 | 403 | 404 | 410 | 429 | 503;

/**
 * A URL as a CSP source expression matching it alone: the characters CSP gives meaning to (`;`
 * and `,` end a directive or policy, spaces separate sources) are percent-encoded, as the URL
 * fetched carries them anyway.
 */
function cspSource(url: string): string {
  return url.replace(/[;,\s]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`);
}

/** Renders a page with its security headers; pages never go to caches or carry a referrer. */
export async function renderPage(
  c: Context<AppEnv>,
  status: PageStatus,
  page: { locale: Locale; title: string; body: Child },
  {
    frameable = false,
    clientStyle = "",
    redirectsTo = [],
    logo = null,
    passkeys = false,
    languages,
    headers = {},
  }: PageOptions = {},
): Promise<Response> {
  const styles = clientStyle ? [STYLE, clientStyle] : [STYLE];
  const csp = [
    "default-src 'none'",
    `style-src ${(await Promise.all(styles.map(inlineSource))).join(" ")}`,
    ...(passkeys ? [`script-src ${await inlineSource(PASSKEY_SCRIPT)}`] : []),
    ...(logo ? [`img-src ${cspSource(logo)}`] : []),
    "base-uri 'none'",
    ["form-action 'self'", ...new Set(redirectsTo.map((uri) => new URL(uri).origin))].join(" "),
    ...(frameable ? [] : ["frame-ancestors 'none'"]),
  ].join("; ");
  const document = (
    <html lang={htmlLang(page.locale)}>
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{page.title}</title>
        {styles.map((style) => (
          <style dangerouslySetInnerHTML={{ __html: style }} />
        ))}
      </head>
      <body>
        {languages && <LanguageSwitch locale={page.locale} href={languages} />}
        <main>
          {logo && <img class="logo" src={logo} alt="" referrerpolicy="no-referrer" />}
          <h1>{page.title}</h1>
          {page.body}
        </main>
        {passkeys && <script dangerouslySetInnerHTML={{ __html: PASSKEY_SCRIPT }} />}
      </body>
    </html>
  );
  return c.html(`<!doctype html>${await document.toString()}`, status, {
    "Content-Security-Policy": csp,
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    ...(frameable ? {} : { "X-Frame-Options": "DENY" }),
    ...headers,
  });
}
