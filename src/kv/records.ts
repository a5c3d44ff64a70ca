/** Records kept as JSON in the CODES namespace. */
import * as z from "zod/mini";
import type { $ZodType } from "zod/v4/core";

/**
 * The record at `key` when it has the schema's shape; null when absent, not JSON, or of another
 * shape (read as unknown, never trusted).
 */
export async function readRecord<Schema extends $ZodType>(
  namespace: KVNamespace,
  key: string,
  schema: Schema,
): Promise<z.infer<Schema> | null> {
  const stored = await namespace.get(key);
  if (stored === null) return null;
  let value: unknown;
  try {
    value = JSON.parse(stored);
  } catch {
    return null;
  }
  const parsed = z.safeParse(schema, value);
  return parsed.success ? parsed.data : null;
}
