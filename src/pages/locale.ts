/**
 * The language of the browser pages: the `locale` parameter when it names one of ours, then the
 * browser's Accept-Language, then en_US.
 */
export const LOCALES = ["en_US", "nb_NO", "sv_SE"] as const;
export type Locale = (typeof LOCALES)[number];

/** The pages' `locale` query parameter, as the OpenAPI document describes it. */
export const LOCALE_PARAMETER = {
  name: "locale",
  in: "query" as const,
  schema: { type: "string", enum: [...LOCALES] },
};

/** Language tags (lower case, primary subtag) and the locale each means here; a Map, so no tag finds an inherited key. */
const LANGUAGES = new Map<string, Locale>([
  ["en", "en_US"],
  ["nb", "nb_NO"],
  ["no", "nb_NO"],
  ["nn", "nb_NO"],
  ["sv", "sv_SE"],
]);

export function pageLocale(requested: string | undefined, acceptLanguage: string | undefined): Locale {
  const named = LOCALES.find((locale) => locale.toLowerCase() === requested?.replace("-", "_").toLowerCase());
  if (named) return named;
  const ranked = (acceptLanguage ?? "")
    .split(",")
    .slice(0, 20)
    .map((part) => {
      const [tag = "", ...params] = part.trim().split(";");
      const q = Number(
        params
          .find((p) => p.trim().startsWith("q="))
          ?.trim()
          .slice(2) ?? 1,
      );
      return { language: tag.split("-")[0]!.toLowerCase(), q: Number.isFinite(q) ? q : 0 };
    })
    .filter(({ q }) => q > 0)
    .sort((a, b) => b.q - a.q);
  for (const { language } of ranked) {
    const locale = LANGUAGES.get(language);
    if (locale) return locale;
  }
  return "en_US";
}

/**
 * The first of OpenID Connect's `ui_locales` (BCP 47 tags, most preferred first) that names one
 * of ours, by its language where the region is not ours (`nb`, `sv-FI`).
 */
export function uiLocale(uiLocales: string | undefined): Locale | undefined {
  for (const tag of (uiLocales ?? "").split(" ").slice(0, 20)) {
    const named = LOCALES.find((locale) => locale.toLowerCase() === tag.replace("-", "_").toLowerCase());
    const locale = named ?? LANGUAGES.get(tag.split("-")[0]!.toLowerCase());
    if (locale) return locale;
  }
  return undefined;
}

/** The `lang` attribute of a page in `locale`. */
export function htmlLang(locale: Locale): string {
  return locale.replace("_", "-");
}
