/**
 * How `GET /api/2/users` matches names fuzzily: both the stored name and the searched one are
 * folded to a key that ignores case, accents and width (`Ærø Åse`, `AERO ASE` and `aerø åse` are
 * one key), letters that do not decompose included, and runs of white space.
 */
const LETTERS_WITHOUT_DECOMPOSITION: Record<string, string> = {
  æ: "ae",
  ø: "o",
  œ: "oe",
  ß: "ss",
  đ: "d",
  ð: "d",
  ł: "l",
  þ: "th",
  ı: "i",
};
const UNDECOMPOSED = new RegExp(`[${Object.keys(LETTERS_WITHOUT_DECOMPOSITION).join("")}]`, "gu");

export function searchKey(text: string): string {
  return text
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .toLowerCase()
    .replace(UNDECOMPOSED, (letter) => LETTERS_WITHOUT_DECOMPOSITION[letter]!)
    .replace(/\s+/gu, " ")
    .trim();
}

export function searchKeyOrNull(text: string | null | undefined): string | null {
  return text == null ? null : searchKey(text);
}
