import * as z from "zod/mini";
import { SIGNING_ALGORITHMS } from "../oauth/signing-algorithms";

/**
 * A back-channel logout notice, as it is queued (queues/logout-notices.ts): which client to tell,
 * where, signed how, and whose session ended (`sub`, `sid`).
 */
export const logoutNoticeSchema = z.object({
  clientId: z.string(),
  uri: z.string(),
  alg: z.enum(SIGNING_ALGORITHMS),
  sub: z.string(),
  sid: z.string(),
});

export type LogoutNotice = z.infer<typeof logoutNoticeSchema>;
