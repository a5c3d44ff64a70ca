/** What the management writes answer (docs/management.md). */
import * as z from "zod/mini";

/** A sign-out's or a withdrawal's reach: the browser sessions ended and the grants revoked. */
export const signOutSchema = z.object({ userId: z.string(), sessions: z.number(), grants: z.number() });

export const auditEventSchema = z.object({
  id: z.string(),
  time: z.string(),
  merchantId: z.number(),
  clientId: z.string(),
  actor: z.enum(["client", "admin", "operator", "user"]),
  action: z.string(),
  userId: z.nullable(z.string()),
  targetClientId: z.nullable(z.string()),
  ip: z.nullable(z.string()),
  detail: z.nullable(z.record(z.string(), z.unknown())),
});
