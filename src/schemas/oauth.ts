// zod/mini: the Worker bundle carries only the checks it uses (about 14 KB against 450 KB for `{ z } from "zod"`).
import * as z from "zod/mini";

const param = z.string().check(z.maxLength(2048));

/** POST /oauth/token, form-encoded. Grant-specific parameters are checked by each grant. */
export const tokenRequestSchema = z.object({
  grant_type: z.string().check(z.minLength(1), z.maxLength(128)),
  client_id: z.optional(param),
  client_secret: z.optional(param),
  username: z.optional(param),
  password: z.optional(z.string().check(z.maxLength(1024))),
  redirect_uri: z.optional(param),
  refresh_token: z.optional(param),
  resource: z.optional(param),
  scope: z.optional(param),
});

export type TokenRequest = z.infer<typeof tokenRequestSchema>;
