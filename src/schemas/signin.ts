// zod/mini, as everywhere in the Worker (see schemas/oauth.ts).
import * as z from "zod/mini";

const param = z.optional(z.string().check(z.maxLength(2048)));

/** POST /api/2/signin, form-encoded; every rule is the handler's, with the spec's texts. */
export const signinRequestSchema = z.object({
  identifier: param,
  redirectUri: param,
  remember: param,
  context: param,
  locale: param,
});
