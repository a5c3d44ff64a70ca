/**
 * The spec's client requirements for redirect URIs (https, no embedded redirect URI, none of the
 * listed characters), plus RFC 6749 §3.1.2's "no fragment". Judged as a browser's URL parser
 * (WHATWG URL) would read each part, because that is how a page or app receiving the redirect
 * will read them: it drops tabs and newlines anywhere, strips leading and trailing C0 controls and
 * spaces (we strip Unicode white space and invisible format characters too), and treats `\` like
 * `/`. The import checks every redirect URI with it, and the grants check the stored ones again.
 */

/** The spec's characters, whitespace, the backslash, and every control character, raw. */
const FORBIDDEN = /[\s!()[\]{};',<>«»“”‘’@"`\\\x00-\x1f\x7f-\x9f]/;
/** A scheme (`https:`, `javascript:`) or a network path (`//`, `\\`, `/\`) at the start of a value. */
const URI_START = /^(?:[a-z][a-z0-9+.-]*:|[/\\]{2})/i;
/**
 * Schemes a path segment must not start with: a browser resolves `http:evil.example` against an
 * https page to `http://evil.example/`. Words a web page cannot navigate to (`/wiki/File:x.png`)
 * or that are no scheme at all stay.
 */
const DANGEROUS_SCHEME_START = /^(?:https?|ftp|wss?|javascript|data|vbscript|blob):/i;
/** Where a decoded query part may start another parameter or a nested query. */
const QUERY_SEPARATORS = /[?&=#;]/;
const TAB_OR_NEWLINE = /[\t\n\r]/g;
const INVISIBLE = "\\s\\u00ad\\u180e\\u200b-\\u200f\\u2060\\ufeff";
/**
 * What the URL parser strips from both ends of its input (C0 controls and the space), and, to be
 * safe with receivers that trim more, Unicode white space and invisible format characters.
 */
const STRIPPED_AT_ENDS = new RegExp(`^[\\x00-\\x20${INVISIBLE}]+|[\\x00-\\x20${INVISIBLE}]+$`, "gu");
const ESCAPE_RUN = /(?:%[0-9a-f]{2})+/gi;

/**
 * A native app's loopback redirect URI (RFC 8252 §7.3): http on the IP literal 127.0.0.1 or
 * [::1] (never `localhost`, which a resolver may send elsewhere), with or without a port; the
 * capture is the URI without its port.
 */
const LOOPBACK = /^(http:\/\/(?:127\.0\.0\.1|\[::1\]))(?::\d{1,5})?(?=[/?]|$)/;

const IPV6_LOOPBACK = /^http:\/\/\[::1\](?=[:/?]|$)/;

export function isLoopbackUri(uri: string): boolean {
  return LOOPBACK.test(uri);
}

/**
 * Why the URI cannot be a redirect URI, or null when it can; with `loopback`, a native app's
 * loopback URI can be (RFC 8252 §7.3: public clients only).
 */
export function redirectUriProblem(uri: string, { loopback = false } = {}): string | null {
  // The brackets of the IPv6 loopback literal are the only ones a redirect URI may have.
  if (FORBIDDEN.test(loopback ? uri.replace(IPV6_LOOPBACK, "http://") : uri)) {
    return "redirect URIs must not contain whitespace, control characters, a backslash or ! ( ) [ ] { } ; ' , < > « » “ ” ‘ ’ @ \" `";
  }
  const https = URL.canParse(uri) && new URL(uri).protocol === "https:";
  if (!https && !(loopback && isLoopbackUri(uri) && URL.canParse(uri))) {
    return loopback
      ? "redirect URIs must be absolute https URLs, or http URLs on 127.0.0.1 or [::1] (RFC 8252)"
      : "redirect URIs must be absolute https URLs";
  }
  if (uri.includes("#")) return "redirect URIs must not have a fragment (RFC 6749 §3.1.2)";
  if (embedsAnotherUri(new URL(uri))) return "redirect URIs must not embed another URI";
  return null;
}

/**
 * True when the URI carries another address a browser could be sent on to: a query key or value
 * that, read as a URL parser reads it, starts with a scheme or a network path, also where the
 * decoded text holds a further query (`a%26next%3D%2F%2Fevil`); or a path whose segments, read the
 * same way, form a network path, hold `://`, or start with a scheme a browser would follow.
 */
function embedsAnotherUri(url: URL): boolean {
  const segments = decodedFully(url.pathname, false).split(/[/\\]/).map(asReceived);
  const path = segments.join("/");
  if (path.includes("://") || path.startsWith("//") || segments.some((s) => DANGEROUS_SCHEME_START.test(s))) {
    return true;
  }
  // `+` is a space to form decoders and a plus to URL decoders: judge both readings.
  const query = url.search.slice(1);
  return [decodedFully(query, true), decodedFully(query, false)].some((decoded) =>
    decoded.split(QUERY_SEPARATORS).some((piece) => URI_START.test(asReceived(piece))),
  );
}

/**
 * Percent-decoded until nothing changes, tabs and newlines dropped before every round (a browser
 * drops them before it decodes); a malformed escape stays as it is without stopping the rest.
 * Every round that changes the text shortens it or turns a `+` into a space, so the loop ends.
 */
function decodedFully(text: string, plusIsSpace: boolean): string {
  let decoded = text.replace(TAB_OR_NEWLINE, "");
  for (;;) {
    const spaced = plusIsSpace ? decoded.replace(/\+/g, " ") : decoded;
    const next = spaced.replace(ESCAPE_RUN, decodeRun).replace(TAB_OR_NEWLINE, "");
    if (next === decoded) return decoded;
    decoded = next;
  }
}

/** A run of escapes decoded as UTF-8, or one escape at a time where the run is not valid UTF-8. */
function decodeRun(run: string): string {
  try {
    return decodeURIComponent(run);
  } catch {
    return run.replace(/%[0-9a-f]{2}/gi, (escape) => {
      const byte = parseInt(escape.slice(1), 16);
      return byte < 0x80 ? String.fromCharCode(byte) : escape;
    });
  }
}

/** The text as a receiver reading it as a URL sees it: without tabs, newlines and padding. */
function asReceived(text: string): string {
  return text.replace(TAB_OR_NEWLINE, "").replace(STRIPPED_AT_ENDS, "");
}

/**
 * Whether `uri` is one of `registered`, exactly, and still within the rules: they were checked on
 * import, and are checked again because the rules may have grown since. A native app's
 * (`nativeApp`: a public client) loopback URI matches on any port (RFC 8252 §7.3), every other
 * part exact: the app listens on whichever port it got.
 */
export function isRegisteredRedirectUri(registered: readonly string[], uri: string, nativeApp = false): boolean {
  if (redirectUriProblem(uri, { loopback: nativeApp }) !== null) return false;
  if (registered.includes(uri)) return true;
  const portless = nativeApp ? withoutLoopbackPort(uri) : null;
  return portless !== null && registered.some((r) => withoutLoopbackPort(r) === portless);
}

function withoutLoopbackPort(uri: string): string | null {
  const match = LOOPBACK.exec(uri);
  return match ? match[1]! + uri.slice(match[0].length) : null;
}
