import { drizzle } from "drizzle-orm/d1";
import * as schema from "./schema";

export type Database = ReturnType<typeof createDatabase>;

function createDatabase(d1: D1Database) {
  return drizzle(d1, { schema });
}

// Building drizzle's schema map is measurable per request; the binding lives as long as the isolate.
const databases = new WeakMap<D1Database, Database>();

export function openDatabase(d1: D1Database): Database {
  let db = databases.get(d1);
  if (!db) {
    db = createDatabase(d1);
    databases.set(d1, db);
  }
  return db;
}
