/**
 * POST /api/2/oauth/exchange, also at POST /oauth/exchange (spec "POST /api/2/oauth/exchange"):
 * a one-time code for the token's user, which another client of the same merchant redeems for
 * its own token (`code`, at /oauth/token with grant_type=authorization_code) or a webview session
 * (`session`). User token. Success is the OAuth exchange object in the container on both paths;
 * failures are in the container under /api/2 and bare (OAuth error format) under /oauth.
 */
import { Hono } from "hono";
import { findClient } from "../db/queries/clients";
import type { AppEnv } from "../env";
import { invalidRequest, OAuthError } from "../errors";
import { describeRoute, respond } from "../http/container";
import { validate } from "../http/validation";
import { createExchangeCode } from "../kv/codes";
import { requireToken } from "../middleware/auth";
import { exchangeRequestSchema } from "../schemas/oauth";
import { exchangeCodeSchema } from "../schemas/responses/oauth";
import { isRegisteredRedirectUri } from "./redirect-uri";

export const exchangeRoutes = new Hono<AppEnv>().post(
  "/exchange",
  describeRoute({
    name: "Create an exchange code",
    controller: "oauth/exchange#create",
    description:
      "A one-time code (30 seconds) for the current user, for another client of the same merchant: `code` is redeemed at /oauth/token (grant_type=authorization_code, with the bound redirect URI), `session` opens a webview session.",
    success: { data: exchangeCodeSchema },
  }),
  requireToken("exchange", "user"),
  validate("form", exchangeRequestSchema, "oauth"),
  async (c) => {
    const { clientId, type, redirectUri } = c.req.valid("form");
    const caller = c.get("caller");
    if (!clientId) throw invalidRequest("Required client ID missing");
    if (type !== "code" && type !== "session") throw invalidRequest("Request must contain a valid exchange type");
    // Rule 1. A client that does not exist belongs to no merchant: the same answer.
    const target = await findClient(c.get("db")(), clientId);
    if (!target || target.merchantId !== caller.merchantId) {
      throw new OAuthError(403, "access_denied", "Provided client ID does not belong to the current merchant");
    }
    // Rules 3 and 2.
    if (type === "session" && !redirectUri) throw invalidRequest("Type session: Missing redirect URI");
    if (type === "code" && !target.defaultRedirectUri) {
      throw invalidRequest("Type code: Client to exchange token with is missing a default redirect");
    }
    if (redirectUri !== undefined && !isRegisteredRedirectUri(target.redirectUris, redirectUri, target.publicClient)) {
      throw new OAuthError(
        400,
        "redirect_uri_mismatch",
        "The redirect URI is not registered for the client to exchange token with",
      );
    }
    const code = await createExchangeCode(
      c.env,
      {
        type,
        userId: caller.userId!,
        issuingClientId: caller.clientId,
        clientId: target.id,
        redirectUri: redirectUri ?? target.defaultRedirectUri!,
      },
      Date.now(),
    );
    return respond(c, { object: "OAuthExchange", data: { code } });
  },
);
