/**
 * GET and POST /oauth/userinfo (OpenID Connect Core §5.3, SPiD's /oauth/userinfo): the claims
 * about the token's user that its scope releases (claims.ts), and those its authorization request
 * asked for by name, as plain JSON. A user token with `openid`; the token in the Authorization
 * header, or for POST in a form body. Admitted like every call with a token: revocation, the
 * client's allow-list, endpoint grant (`userinfo`) and quota.
 */
import { type Context, Hono } from "hono";
import * as z from "zod/mini";
import { findUserProfiles } from "../../db/queries/users";
import type { AppEnv } from "../../env";
import { OAuthError } from "../../errors";
import { describeRoute } from "../../http/container";
import { requireToken } from "../../middleware/auth";
import { invalidTokenError } from "../tokens";
import { releasedClaims, userClaims } from "./claims";

const userinfoSchema = z.looseObject({ sub: z.string() });
z.globalRegistry.add(userinfoSchema, { id: "UserInfo" });

const description = (method: string) =>
  `OpenID Connect Core §5.3, by ${method}: the user's claims that the token's scope releases (profile, email, phone, address), with \`sub\` (the user's uuid, as in the ID token) and \`legacy_user_id\` (the userId). A user token with scope openid${method === "POST" ? "; the token in the Authorization header or as `access_token` in a form body" : ""}.`;

export const userinfoRoutes = new Hono<AppEnv>()
  .get(
    "/userinfo",
    describeRoute({
      name: "Get the user's claims",
      controller: "oauth/userinfo#show",
      description: description("GET"),
      success: { data: userinfoSchema, bare: true },
    }),
    requireToken("userinfo", "user"),
    (c) => userinfo(c),
  )
  .post(
    "/userinfo",
    describeRoute({
      name: "Get the user's claims by POST",
      controller: "oauth/userinfo#create",
      description: description("POST"),
      success: { data: userinfoSchema, bare: true },
    }),
    requireToken("userinfo", "user"),
    (c) => userinfo(c),
  );

async function userinfo(c: Context<AppEnv>): Promise<Response> {
  const caller = c.get("caller");
  const scopes = caller.scope.split(" ");
  if (!scopes.includes("openid")) {
    throw new OAuthError(403, "insufficient_scope", "The access token was not granted the openid scope", {
      "WWW-Authenticate": 'Bearer error="insufficient_scope", scope="openid"',
    });
  }
  const [profile] = await findUserProfiles(c.get("db")(), [caller.userId!]);
  // A user gone since the token was issued: the token stands for nobody now.
  if (!profile) throw invalidTokenError("The access token's user no longer exists");
  return c.json(userClaims(profile, releasedClaims(scopes, caller.userinfoClaims)), 200, {
    "Cache-Control": "no-store",
  });
}
