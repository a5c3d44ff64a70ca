/**
 * A client's `css` setting turned into its pages' style sheet. The spec does not show its
 * contents; here it is a small theme: `{"button": {"background-color": "#0a7"}}` styles an element
 * of the page, and a value at the top level (`{"color": "#222"}`) styles the body. Only the
 * elements and properties below are taken, and only plain values (words, numbers, colours,
 * quoted font names, rgb()/hsl()): no url(), no @rules, nothing that could load a resource or
 * leave the declaration. Anything else is left out, silently, so an odd setting never breaks a
 * login page.
 */
type CssSetting = Record<string, unknown>;

const ELEMENTS = new Set(["body", "main", "h1", "p", "a", "label", "input", "button"]);
const PROPERTIES = new Set([
  "color",
  "background-color",
  "font-family",
  "font-size",
  "font-weight",
  "border",
  "border-color",
  "border-radius",
  "padding",
  "margin",
  "text-align",
  "max-width",
]);
const SAFE_VALUE = /^(?:[#a-z0-9 .,%'"-]|(?:rgba?|hsla?)\([0-9 .,%/-]*\))+$/i;
const MAX_VALUE_LENGTH = 100;

export function clientStyle(css: CssSetting): string {
  const rules = new Map<string, string[]>();
  const add = (element: string, property: string, value: unknown) => {
    const text = typeof value === "number" ? String(value) : value;
    if (!ELEMENTS.has(element) || !PROPERTIES.has(property) || typeof text !== "string") return;
    if (text.length > MAX_VALUE_LENGTH || !SAFE_VALUE.test(text) || !quotesBalanced(text)) return;
    rules.set(element, [...(rules.get(element) ?? []), `${property}:${text}`]);
  };
  for (const [key, value] of Object.entries(css)) {
    if (value !== null && typeof value === "object") {
      for (const [property, setting] of Object.entries(value)) add(key, property, setting);
    } else {
      add("body", key, value);
    }
  }
  return [...rules].map(([element, declarations]) => `${element}{${declarations.join(";")}}`).join("");
}

/** An open quote would run on over the declarations after it. */
function quotesBalanced(text: string): boolean {
  return (text.match(/"/g)?.length ?? 0) % 2 === 0 && (text.match(/'/g)?.length ?? 0) % 2 === 0;
}

/** A client's look on its pages: its style sheet and its logo. */
export function clientBranding(client: { css: CssSetting; logoUri: string | null }) {
  return { clientStyle: clientStyle(client.css), logo: client.logoUri };
}
