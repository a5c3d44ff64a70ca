import { z } from "zod";

const param = z.string().max(2048);

/** POST /oauth/token, form-encoded. Grant-specific parameters are checked by each grant. */
export const tokenRequestSchema = z.object({
  grant_type: z.string().min(1).max(128),
  client_id: param.optional(),
  client_secret: param.optional(),
  username: param.optional(),
  password: z.string().max(1024).optional(),
  redirect_uri: param.optional(),
  resource: param.optional(),
  scope: param.optional(),
});

export type TokenRequest = z.infer<typeof tokenRequestSchema>;
