import * as z from "zod/mini";
import { SIGNING_ALGORITHMS } from "../oauth/signing-algorithms";

/**
 * A back-channel logout notice, as it is queued (queues/logout-notices.ts): which client to tell,
 * where, signed how, and whose session ended (`sub`, `sid`); without `sid`, every session of the
 * user at the client (a user signed out everywhere, or blocked).
 */
export const logoutNoticeSchema = z.object({
  clientId: z.string(),
  uri: z.string(),
  alg: z.enum(SIGNING_ALGORITHMS),
  sub: z.string(),
  sid: z.optional(z.string()),
});

export type LogoutNotice = z.infer<typeof logoutNoticeSchema>;
