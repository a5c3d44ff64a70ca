// zod/mini, as everywhere in the Worker (see schemas/oauth.ts).
import * as z from "zod/mini";

/** The account statuses a management call sets, by name (docs/management.md "Status"). */
export const ACCOUNT_STATUSES = ["active", "blocked", "inactive"] as const;

/** POST /api/2/user/{userId}/status, form-encoded. */
export const userStatusRequestSchema = z.object({ status: z.enum(ACCOUNT_STATUSES) });
