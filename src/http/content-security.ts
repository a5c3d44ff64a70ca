/** Content-Security-Policy sources for a page's own inline style, by hash. */
const hashes = new Map<string, Promise<string>>();

/** `'sha256-…'` of an inline style sheet, computed once per text (pages have a handful of fixed sheets). */
export function inlineStyleSource(style: string): Promise<string> {
  let hash = hashes.get(style);
  if (!hash) {
    hash = crypto.subtle
      .digest("SHA-256", new TextEncoder().encode(style))
      .then((digest) => `'sha256-${btoa(String.fromCharCode(...new Uint8Array(digest)))}'`);
    hashes.set(style, hash);
  }
  return hash;
}
