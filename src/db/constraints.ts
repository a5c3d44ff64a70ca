/** Which unique index refused a write, as D1 words it (wrapped by drizzle's DrizzleQueryError or not). */
export function violatesUnique(err: unknown, column: string): boolean {
  const cause = (err as { cause?: unknown } | null)?.cause;
  const text = `UNIQUE constraint failed: ${column}`;
  return [err, cause].some((e) => e instanceof Error && e.message.includes(text));
}
