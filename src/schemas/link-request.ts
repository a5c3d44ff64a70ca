// zod/mini, as everywhere in the Worker (see schemas/oauth.ts).
import * as z from "zod/mini";
import { signUpProfileSchema } from "./sign-up";

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
  /** The sign-up view's profile (schemas/sign-up.ts), for the account the link makes. */
  profile: z.optional(signUpProfileSchema),
});

export type LinkRequestMessage = z.infer<typeof linkRequestMessageSchema>;
