import type { Database } from "../client";
import { refreshTokens } from "../schema";

export function insertRefreshToken(db: Database, token: typeof refreshTokens.$inferInsert) {
  return db.insert(refreshTokens).values(token);
}
