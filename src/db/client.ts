import { drizzle } from "drizzle-orm/d1";
import * as schema from "./schema";

export type Database = ReturnType<typeof openDatabase>;

export function openDatabase(d1: D1Database) {
  return drizzle(d1, { schema });
}
