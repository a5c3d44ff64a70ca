/** The spec's "integer (as string)": the number's decimal text, or null where there is none. */
export function integerText(value: number | null): string | null {
  return value === null ? null : String(value);
}
