/**
 * The spec's client requirements for redirect URIs (https, no embedded redirect URI, none of the
 * listed characters), plus RFC 6749 §3.1.2's "no fragment". Judged as a browser's URL parser
 * (WHATWG URL) would read each part, because that is how a page or app receiving the redirect
 * will read them: it drops tabs and newlines anywhere, strips leading and trailing C0 controls and
 * spaces (we strip Unicode white space and zero-width characters too), and treats `\` like `/`.
 * Used by the import and, again, wherever a redirect URI arrives.
 */

/** Longest redirect URI accepted, in UTF-8 bytes (a client row must fit one D1 statement). */
export const MAX_REDIRECT_URI_BYTES = 1024;

/** The spec's characters, whitespace, the backslash, and every control character, raw. */
const FORBIDDEN = /[\s!()[\]{};',<>«»“”‘’@"`\\\x00-\x1f\x7f-\x9f]/;
/** A scheme (`https:`, `javascript:`) or a network path (`//`, `\\`, `/\`) at the start of a value. */
const URI_START = /^(?:[a-z][a-z0-9+.-]*:|[/\\]{2})/i;
const TAB_OR_NEWLINE = /[\t\n\r]/g;
/**
 * What the URL parser strips from both ends of its input (C0 controls and the space), and, to be
 * safe with receivers that trim more, Unicode white space and zero-width characters.
 */
const STRIPPED_AT_ENDS = /^[\x00-\x20\s\u200b-\u200d\u2060\ufeff]+|[\x00-\x20\s\u200b-\u200d\u2060\ufeff]+$/gu;
const ESCAPE_RUN = /(?:%[0-9a-f]{2})+/gi;
const MAX_DECODING_ROUNDS = 8;

/** Why the URI cannot be a redirect URI, or null when it can. */
export function redirectUriProblem(uri: string): string | null {
  if (new TextEncoder().encode(uri).length > MAX_REDIRECT_URI_BYTES) {
    return `redirect URIs are at most ${MAX_REDIRECT_URI_BYTES} bytes`;
  }
  if (FORBIDDEN.test(uri)) {
    return "redirect URIs must not contain whitespace, control characters, a backslash or ! ( ) [ ] { } ; ' , < > « » “ ” ‘ ’ @ \" `";
  }
  if (!URL.canParse(uri) || new URL(uri).protocol !== "https:") return "redirect URIs must be absolute https URLs";
  if (uri.includes("#")) return "redirect URIs must not have a fragment (RFC 6749 §3.1.2)";
  if (embedsAnotherUri(new URL(uri))) return "redirect URIs must not embed another URI";
  return null;
}

/**
 * True when the URI carries another address a browser could be sent on to: a query key or value
 * that, read as a URL parser reads it, starts with a scheme or a network path; or a path that,
 * its segments read the same way, holds `://` or starts with `//`. Encoded and multiply encoded
 * forms count as what they decode to.
 */
function embedsAnotherUri(url: URL): boolean {
  const segments = decodedFully(url.pathname, false).split(/[/\\]/);
  const path = segments.map(asUrlParserSees).join("/");
  if (path.includes("://") || path.startsWith("//")) return true;
  return [...url.searchParams].some(([key, value]) =>
    [key, value].some((part) => URI_START.test(asUrlParserSees(decodedFully(part, true)))),
  );
}

/**
 * Percent-decoded until nothing changes, tabs and newlines dropped before every round (a browser
 * drops them before it decodes); a malformed escape stays as it is without stopping the rest.
 * Query parts are also read with `+` as a space, as a receiving application reading its own query
 * string would.
 */
function decodedFully(text: string, plusIsSpace: boolean): string {
  let decoded = text.replace(TAB_OR_NEWLINE, "");
  for (let round = 0; round < MAX_DECODING_ROUNDS; round++) {
    const spaced = plusIsSpace ? decoded.replace(/\+/g, " ") : decoded;
    const next = spaced.replace(ESCAPE_RUN, decodeRun).replace(TAB_OR_NEWLINE, "");
    if (next === decoded) break;
    decoded = next;
  }
  return decoded;
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

function asUrlParserSees(text: string): string {
  return text.replace(TAB_OR_NEWLINE, "").replace(STRIPPED_AT_ENDS, "");
}
