/**
 * A RateLimiter table replaced by one of another shape: as the object starts, the old table's rows
 * are copied into the new one (`copy`, an INSERT … SELECT from it) and the old table dropped, once.
 */
export function replaceOldTable(sql: SqlStorage, oldTable: string, copy: string): void {
  const exists = sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", oldTable).toArray();
  if (exists.length === 0) return;
  sql.exec(copy);
  sql.exec(`DROP TABLE ${oldTable}`);
}
