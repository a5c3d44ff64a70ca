/** Content-Security-Policy sources for a page's own inline style and script, by hash. */
const hashes = new Map<string, Promise<string>>();
/** Our few fixed sheets and the clients' own; past this many, the oldest is computed again when needed. */
const MAX_HASHES = 500;

/** `'sha256-…'` of an inline style sheet or script, computed once per text. */
export function inlineSource(text: string): Promise<string> {
  let hash = hashes.get(text);
  if (!hash) {
    if (hashes.size >= MAX_HASHES) hashes.delete(hashes.keys().next().value!);
    hash = crypto.subtle
      .digest("SHA-256", new TextEncoder().encode(text))
      .then((digest) => `'sha256-${btoa(String.fromCharCode(...new Uint8Array(digest)))}'`);
    hashes.set(text, hash);
  }
  return hash;
}
