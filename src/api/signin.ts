/**
 * POST /api/2/signin: e-mails a sign-in link to an address (oauth/signin-links.ts). Server token.
 * The link leads to a confirmation page (GET /oauth/signin); confirming signs the person in and,
 * after the consent page where the client needs the user's consent, sends the browser to
 * `redirectUri` with an authorization code for the calling client.
 */
import { Hono } from "hono";
import * as z from "zod/mini";
import { findClient } from "../db/queries/clients";
import type { AppEnv } from "../env";
import { ApiError, TryAgainLater } from "../errors";
import { describeRoute, respond } from "../http/container";
import { nowInSeconds } from "../http/datetime";
import { validate } from "../http/validation";
import { requireToken } from "../middleware/auth";
import { isRegisteredRedirectUri } from "../oauth/redirect-uri";
import { linkAuthorization, requestSignInLink } from "../oauth/signin-links";
import { pageLocale } from "../pages/locale";
import { canonicalEmailAddress } from "../schemas/email-address";
import { signinRequestSchema } from "../schemas/signin";

/** Shown on the confirmation page and in the mail; one short paragraph. */
const MAX_CONTEXT_LENGTH = 500;
const CONTROL = /\p{Cc}/u;
const SIGNIN_CREATED = "Signin request created and sent";

const notCreated = (status: 400 | 409) =>
  new ApiError(status, "invalid_request", "Signin request could not be created");
/** The user's last link is still being mailed: asked again once that mail is out, this is a 409 or a 201. */
const stillSending = (retryAfter: number) =>
  new TryAgainLater("A signin request for this user is being sent; try again shortly", retryAfter);

export const signinRoutes = new Hono<AppEnv>().post(
  "/signin",
  describeRoute({
    name: "Send a sign-in link",
    controller: "api/signin#create",
    description:
      "E-mails a link that signs the address in without a password (only a user's primary or a verified address): once, within 5 minutes, the newest link per user only, at most one a minute (409; 503 with Retry-After while the user's last link is still being sent). Parameters: `identifier` (the e-mail), `redirectUri` (registered for the calling client), `remember` (`0` or `1`, default `1`), `context` (up to 500 characters, shown in the mail and on the confirmation page), `locale` (en_US, nb_NO, sv_SE; default en_US).",
    success: { status: 201, data: z.string() },
  }),
  requireToken("signin", "server"),
  validate("form", signinRequestSchema, "api", "Signin request could not be created"),
  async (c) => {
    const form = c.req.valid("form");
    if (!form.identifier) throw new ApiError(400, "invalid_request", "Required identifier parameter is missing");
    const email = canonicalEmailAddress(form.identifier);
    if (email === null) throw new ApiError(400, "invalid_request", "Required identifier parameter is invalid");
    if (!form.redirectUri) throw new ApiError(400, "invalid_request", "Required redirectUri parameter is missing");
    const client = await findClient(c.get("db")(), c.get("caller").clientId);
    if (!client || !isRegisteredRedirectUri(client.redirectUris, form.redirectUri, client.publicClient)) {
      throw new ApiError(
        400,
        "redirect_uri_mismatch",
        "Required redirectUri parameter is invalid or not matching requesting client",
      );
    }
    const remember = form.remember ?? "1";
    if (remember !== "0" && remember !== "1") throw notCreated(400);
    const context = form.context?.trim() || null;
    if (context !== null && (context.length > MAX_CONTEXT_LENGTH || CONTROL.test(context))) throw notCreated(400);

    const outcome = await requestSignInLink(
      c.env,
      c.get("db")(),
      {
        client,
        email,
        redirectUri: form.redirectUri,
        remember: remember === "1",
        context,
        locale: pageLocale(form.locale ?? "en_US", undefined),
        authorization: linkAuthorization(client.id, form.redirectUri),
      },
      nowInSeconds(),
      c.executionCtx,
    );
    switch (outcome.outcome) {
      case "blocked":
        throw new ApiError(302, "access_denied", "The email address is blocked");
      case "too_soon":
        throw notCreated(409);
      case "sending":
        throw stillSending(outcome.retryAfter);
      case "refused":
      case "unverified":
      case "not_sent":
        throw notCreated(400);
      case "sent":
        return respond(c, { object: "SigninRequest", data: SIGNIN_CREATED }, 201);
    }
  },
);
