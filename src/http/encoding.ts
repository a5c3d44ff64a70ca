/**
 * Incoming query strings and form bodies must be UTF-8. A field that is not valid UTF-8 is read as
 * ISO-8859-1 and re-encoded as UTF-8 (spec "Basics"), so that everything downstream, including the
 * validators, only ever sees valid UTF-8. Valid input passes through untouched.
 */

/** Throws on invalid UTF-8 instead of substituting U+FFFD. */
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** The UTF-8 text that Base64 (standard alphabet) encodes; throws when it is not Base64 of UTF-8. */
export function decodeBase64Utf8(base64: string): string {
  return strictUtf8.decode(asciiBytes(atob(base64)));
}

/** The URL with its query made valid UTF-8; null when it already is (the usual case). */
export function utf8Url(url: string): string | null {
  if (!url.includes("%")) return null;
  const parsed = new URL(url);
  const query = normalizeForm(parsed.search.slice(1));
  if (query === null) return null;
  parsed.search = query;
  return parsed.href;
}

/**
 * A form body as ASCII text: each field made valid UTF-8, and every byte >= 0x80 left after that
 * percent-encoded. URLSearchParams reads this text exactly as WHATWG's
 * application/x-www-form-urlencoded parser reads the bytes (a BOM included, as part of the first
 * name; malformed escapes kept literally), so every reader of a form body reads the same fields.
 */
export function formText(body: Uint8Array): string {
  return normalizeForm(body) ?? escapeHighBytes(body);
}

function escapeHighBytes(bytes: Uint8Array): string {
  let text = "";
  let start = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (b < 0x80) continue;
    text += `${strictUtf8.decode(bytes.subarray(start, i))}%${b.toString(16).toUpperCase()}`;
    start = i + 1;
  }
  return text + strictUtf8.decode(bytes.subarray(start));
}

/**
 * Re-encodes a form-encoded string or byte sequence when any of its fields is not valid UTF-8;
 * returns null when it already is.
 */
function normalizeForm(input: string | Uint8Array): string | null {
  const bytes = typeof input === "string" ? asciiBytes(input) : input;
  if (!mayHoldNonAscii(bytes)) return null;
  let changed = false;
  const pairs = splitBytes(bytes, 0x26 /* & */).map((field) => {
    const eq = field.indexOf(0x3d /* = */);
    const parts = eq < 0 ? [field] : [field.subarray(0, eq), field.subarray(eq + 1)];
    return parts
      .map((part) => {
        const decoded = percentDecode(part);
        try {
          return encodeURIComponent(strictUtf8.decode(decoded));
        } catch {
          changed = true;
          return encodeURIComponent(latin1(decoded));
        }
      })
      .join("=");
  });
  return changed ? pairs.join("&") : null;
}

/** True when the bytes contain a raw byte >= 0x80 or a percent escape of one. */
function mayHoldNonAscii(bytes: Uint8Array): boolean {
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (b >= 0x80) return true;
    if (b === 0x25 /* % */ && i + 1 < bytes.length && hexValue(bytes[i + 1]!) >= 8) return true;
  }
  return false;
}

/** Form decoding to bytes: `+` is a space, `%XX` is one byte, malformed escapes stay literal. */
function percentDecode(part: Uint8Array): Uint8Array {
  const out = new Uint8Array(part.length);
  let n = 0;
  for (let i = 0; i < part.length; i++) {
    const b = part[i]!;
    if (b === 0x2b /* + */) {
      out[n++] = 0x20;
    } else if (b === 0x25 && i + 2 < part.length && hexValue(part[i + 1]!) >= 0 && hexValue(part[i + 2]!) >= 0) {
      out[n++] = hexValue(part[i + 1]!) * 16 + hexValue(part[i + 2]!);
      i += 2;
    } else {
      out[n++] = b;
    }
  }
  return out.subarray(0, n);
}

function hexValue(b: number): number {
  if (b >= 0x30 && b <= 0x39) return b - 0x30;
  if (b >= 0x41 && b <= 0x46) return b - 0x37;
  if (b >= 0x61 && b <= 0x66) return b - 0x57;
  return -1;
}

/** ISO-8859-1 maps each byte to the code point of the same value. */
function latin1(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return s;
}

function asciiBytes(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i) & 0xff;
  return out;
}

function splitBytes(bytes: Uint8Array, separator: number): Uint8Array[] {
  const parts: Uint8Array[] = [];
  let start = 0;
  for (let i = 0; i <= bytes.length; i++) {
    if (i === bytes.length || bytes[i] === separator) {
      parts.push(bytes.subarray(start, i));
      start = i + 1;
    }
  }
  return parts;
}
