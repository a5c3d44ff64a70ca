// zod/mini, as everywhere in the Worker (see schemas/oauth.ts).
import * as z from "zod/mini";

/**
 * A login page's "e-mail me a link", as it is queued (queues/link-requests.ts): what making and
 * mailing the link needs, the client by id, the authorization request as the page carried it.
 */
export const linkRequestMessageSchema = z.object({
  clientId: z.string(),
  /** Canonical. */
  email: z.string(),
  redirectUri: z.string(),
  remember: z.boolean(),
  locale: z.string(),
  authorization: z.record(z.string(), z.string()),
  /** A link that sets a new password (the login page's "Forgot your password?"), not one that signs in alone. */
  resetsPassword: z.optional(z.boolean()),
});

export type LinkRequestMessage = z.infer<typeof linkRequestMessageSchema>;
