/**
 * Signed responses on request (`signed=1`, http/signing.ts). This middleware notes the request;
 * requireToken then loads the calling client's signing key (one D1 read, only for signed
 * requests), and the container signs with it. A request without a token has no client to sign
 * for, so its success becomes a 400.
 */
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { findClientSigningSecrets } from "../db/queries/clients";
import type { AppEnv } from "../env";
import { ApiError } from "../errors";
import { respondError } from "../http/container";
import { nowInSeconds } from "../http/datetime";
import { signingKey, signingRequested } from "../http/signing";
import { signingSecretsAt } from "../oauth/signing-secrets";
import { keyRing, openSecret } from "../security/data-protection";

export const signedResponses = createMiddleware<AppEnv>(async (c, next) => {
  // A call without a query cannot ask; the others are parsed (decoded), so no spelling slips by.
  if (!c.req.url.includes("?") || !signingRequested(new URL(c.req.url))) return next();
  const signing: { key: CryptoKey | null } = { key: null };
  c.set("signing", signing);
  await next();
  if (signing.key === null && c.res.status < 400) {
    c.res = respondError(
      c,
      new ApiError(
        400,
        "invalid_request",
        "Signed responses need an access token: they are signed with the calling client's signing secret",
      ),
    );
  }
});

/**
 * For a signed request, the calling client's signing key (over a rotation, the previous one until
 * its end); a client without a signing secret gets a 400.
 */
export async function loadSigningKey(c: Context<AppEnv>, clientId: string): Promise<void> {
  const signing = c.get("signing");
  if (!signing) return;
  const secrets = await findClientSigningSecrets(c.get("db")(), clientId);
  const sealed = secrets ? signingSecretsAt(secrets, nowInSeconds()).signsWith : null;
  if (sealed === null) {
    throw new ApiError(
      400,
      "invalid_request",
      "This client has no signing secret, so its responses cannot be signed; ask for one to be set",
    );
  }
  signing.key = await signingKey(await openSecret(keyRing(c.env), sealed));
}
