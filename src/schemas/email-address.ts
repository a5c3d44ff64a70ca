/**
 * E-mail addresses as people have them (RFC 5321, and RFC 6531 for UTF-8): a dot-atom local part
 * whose atoms may hold any letter or symbol beyond ASCII, and a domain name in Unicode or
 * punycode. Every address is stored, compared and searched in one canonical form (docs/operations.md
 * "Importing data", e-mail addresses): local part lower-cased and in Unicode NFC, domain lower-cased in its
 * Unicode form, so `Ærø.Åse@Bücher.example` and `ærø.åse@xn--bcher-kva.example` are one address.
 */
import { toUnicode } from "punycode/punycode.es6.js";

const MAX_ADDRESS_BYTES = 254;
const MAX_LOCAL_PART_BYTES = 64;
const MAX_DOMAIN_BYTES = 253;
/**
 * A dot-atom (RFC 5322 §3.2.3) whose atoms take RFC 6531's UTF-8 characters too: anything beyond
 * ASCII except controls, separators, format characters (bidi overrides among them) and
 * unassigned code points. Quoted local parts are refused.
 */
const LOCAL_PART = /^[\p{L}\p{M}\p{N}\p{P}\p{S}]+$/u;
const ASCII_ATOM_SPECIALS = /[\x00-\x20"(),.:;<>@[\\\]\x7f]/;
/** A host name label after IDNA ToASCII; the top-level one is letters or an IDN (`xn--`). */
const ASCII_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const TOP_LEVEL_LABEL = /^(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$/;
/** Characters that would make the domain more than a host name to the URL parser. */
const NOT_IN_DOMAIN = /[\s/?#@:\\[\]%]/u;

const utf8Length = (text: string) => new TextEncoder().encode(text).length;

/** The canonical form of an e-mail address, or null when it is not one. */
export function canonicalEmailAddress(address: string): string | null {
  // Normalization can only shorten a well-formed address so much; refuse the absurd before any work.
  if (address.length > 4 * MAX_ADDRESS_BYTES) return null;
  const at = address.lastIndexOf("@");
  if (at < 1 || address !== address.trim()) return null;
  const local = address.slice(0, at).toLowerCase().normalize("NFC");
  const domain = canonicalDomain(address.slice(at + 1));
  if (domain === null || utf8Length(local) > MAX_LOCAL_PART_BYTES) return null;
  const atoms = local.split(".");
  if (atoms.some((atom) => atom === "" || !LOCAL_PART.test(atom) || ASCII_ATOM_SPECIALS.test(atom))) return null;
  const canonical = `${local}@${domain}`;
  return utf8Length(canonical) <= MAX_ADDRESS_BYTES ? canonical : null;
}

/**
 * The domain lower-cased in Unicode, after IDNA processing (UTS #46, by the runtime's URL parser)
 * has checked it; a punycode label that does not decode back to itself is refused.
 */
function canonicalDomain(domain: string): string | null {
  if (domain === "" || NOT_IN_DOMAIN.test(domain)) return null;
  const ascii = hostName(domain);
  if (ascii === null || ascii.length > MAX_DOMAIN_BYTES) return null;
  const labels = ascii.split(".");
  if (labels.length < 2 || !labels.every((label) => ASCII_LABEL.test(label))) return null;
  if (!TOP_LEVEL_LABEL.test(labels.at(-1)!)) return null;
  let unicode: string;
  try {
    unicode = toUnicode(ascii);
  } catch {
    return null;
  }
  return hostName(unicode) === ascii ? unicode : null;
}

/** The host name the URL parser makes of the domain (ASCII, lower-cased), or null. */
function hostName(domain: string): string | null {
  try {
    return new URL(`http://${domain}/`).hostname;
  } catch {
    return null;
  }
}

/**
 * The form an e-mail address is looked up by: canonical when it is an address, otherwise trimmed
 * and lower-cased (it then matches no stored address, and is still one key for throttling).
 */
export function emailLookupKey(text: string): string {
  return canonicalEmailAddress(text.trim()) ?? text.trim().toLowerCase();
}
