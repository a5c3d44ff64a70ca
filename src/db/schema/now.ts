import { sql } from "drizzle-orm";

/** The default of the created and updated columns: the time of the insert, in Unix seconds. */
export const now = sql`(unixepoch())`;
