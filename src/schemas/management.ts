// zod/mini, as everywhere in the Worker (see schemas/oauth.ts).
import * as z from "zod/mini";

/** The account statuses a management call sets, by name (docs/management.md "Status"). */
export const ACCOUNT_STATUSES = ["active", "blocked", "inactive"] as const;

/** POST /api/2/user/{userId}/status, form-encoded. */
export const userStatusRequestSchema = z.object({ status: z.enum(ACCOUNT_STATUSES) });

/** POST /api/2/client/{clientId}/secret, form-encoded: until when the old secret keeps working. */
export const clientSecretRequestSchema = z.object({
  previousSecretValidUntil: z.optional(z.string().check(z.maxLength(32))),
});

/** POST /api/2/client/{clientId}/status, form-encoded. */
export const clientStatusRequestSchema = z.object({ status: z.enum(["active", "disabled"]) });

/** POST /api/2/keys/reseal, form-encoded: `end=now` ends the rotation whatever still depends on the previous key. */
export const resealRequestSchema = z.object({ end: z.optional(z.enum(["when-done", "now"])) });
