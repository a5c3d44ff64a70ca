/**
 * Renders prepared statements as a SQL script for `wrangler d1 execute --file`, one statement per
 * line. Text goes in as hex (`CAST(X'..' AS TEXT)`), so no value can break out of its literal or
 * be mistaken for a statement separator, whatever it contains.
 */
export type PreparedQuery = { sql: string; params: unknown[] };

const encoder = new TextEncoder();

export function toSqlScript(queries: PreparedQuery[]): string {
  return queries.map((q) => `${inlineParams(q)};\n`).join("");
}

function inlineParams({ sql, params }: PreparedQuery): string {
  let next = 0;
  const text = sql.replace(/\?/g, () => literal(params[next++]));
  if (next !== params.length) throw new Error(`statement has ${next} placeholders but ${params.length} values`);
  return text.replace(/\s*\n\s*/g, " ");
}

function literal(value: unknown): string {
  if (value === null || value === undefined) return "NULL";
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  if (typeof value === "bigint") return value.toString();
  if (typeof value === "boolean") return value ? "1" : "0";
  if (typeof value === "string") {
    const hex = Array.from(encoder.encode(value), (b) => b.toString(16).padStart(2, "0")).join("");
    return `CAST(X'${hex}' AS TEXT)`;
  }
  throw new Error(`cannot write a ${typeof value} into SQL`);
}
