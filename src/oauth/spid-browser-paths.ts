/**
 * SPiD's browser paths, for integrations that send people there (spid-tech-docs
 * `articles/flows/auth-flow.md`, `articles/logout-flows.md`; the PHP and Java SDKs' login and
 * logout URLs): GET /flow/{auth,login,signup,signin} start the authorization flow exactly as GET
 * /oauth/authorize does, and GET /logout is GET /oauth/logout. Same rules, same pages; only the
 * names differ.
 */
import { type Context, Hono } from "hono";
import * as z from "zod/mini";
import type { AppEnv } from "../env";
import { ApiError, TryAgainLater } from "../errors";
import { describeRoute } from "../http/container";
import { LOCALE_PARAMETER } from "../pages/locale";
import { startAuthorization } from "./authorize";
import { askToSignOut } from "./logout";
import { MAX_TOKEN_LENGTH, verifyAccessToken } from "./tokens";

/** Each flow and the view of the sign-in page it opens (authorization-request.ts `view`). */
const FLOW_VIEWS = new Map<string, string | undefined>([
  ["auth", undefined],
  ["login", undefined],
  ["signup", "signup"],
  ["signin", "signin"],
  ["password", "password"],
]);

const query = (name: string, description?: string) => ({
  name,
  in: "query" as const,
  ...(description && { description }),
  schema: { type: "string" },
});

export const spidBrowserRoutes = new Hono<AppEnv>()
  .get(
    "/flow/:flow",
    describeRoute({
      name: "Start a login (SPiD's flow paths)",
      controller: "oauth/flow#show",
      description:
        "`flow` is auth, login, signup, signin or password. SPiD's /flow/auth and /flow/login open the login page, /flow/signup its sign-up view, /flow/signin its sign-in link view and /flow/password its forgotten-password view; otherwise exactly GET /oauth/authorize (same parameters, rules and answers). `cancel_redirect_uri` is `failure_redirect_uri`; SPiD's `v`, `tag`, `tracking_ref`, `webview` and `xiti_json` are accepted and ignored.",
      parameters: [
        query("client_id"),
        query("response_type"),
        query("redirect_uri", "Registered for the client, exactly; the client's default when absent"),
        query("state"),
        query("cancel_redirect_uri", "Where a cancelled or failed flow goes; registered for the client, exactly"),
        query("code_challenge"),
        query("code_challenge_method"),
        LOCALE_PARAMETER,
      ],
      success: { data: z.string(), bare: true, mediaType: "text/html" },
    }),
    (c) => {
      const flow = c.req.param("flow") ?? "";
      // SPiD's other flows (checkout, profile, payment) are not offered here.
      if (!FLOW_VIEWS.has(flow)) return c.notFound();
      const view = FLOW_VIEWS.get(flow);
      return startAuthorization(c, (name) => {
        if (name === "view") return [...(view === undefined ? [] : [view]), ...(c.req.queries("view") ?? [])];
        const values = c.req.queries(name) ?? [];
        // Both names given are a repeated parameter, refused as any other.
        return name === "failure_redirect_uri" ? [...values, ...(c.req.queries("cancel_redirect_uri") ?? [])] : values;
      });
    },
  )
  .get(
    "/logout",
    describeRoute({
      name: "Sign out (SPiD's path)",
      controller: "oauth/logout#spid",
      description:
        "GET /oauth/logout under SPiD's path. The client is `client_id`, the client `client_sdrn` names (SPiD's browser SDK), or, as SPiD's PHP and Java SDKs send it, the client of a valid access token in `oauth_token` (only to name the client: the token is not revoked).",
      parameters: [
        query("client_id"),
        query("redirect_uri"),
        query(
          "client_sdrn",
          "The client as SPiD's browser SDK names it (sdrn:<namespace>:client:<id>), when client_id is not given",
        ),
        query("oauth_token", "An access token of the client, when neither names it"),
        LOCALE_PARAMETER,
      ],
      success: { data: z.string(), bare: true, mediaType: "text/html" },
    }),
    async (c) =>
      askToSignOut(c, c.req.query("client_id") ?? sdrnClient(c.req.query("client_sdrn")) ?? (await tokenClient(c))),
  );

/**
 * The client an SDRN names (`sdrn:<namespace>:client:<id>`): SPiD's browser SDK names the client
 * so in its logout URL, when its session domain is this service.
 */
function sdrnClient(sdrn: string | undefined): string | undefined {
  return sdrn === undefined ? undefined : /^sdrn:[^:]*:client:([^:]+)$/.exec(sdrn)?.[1];
}

/** The client of the query's `oauth_token`, when it is one valid access token; otherwise none. */
async function tokenClient(c: Context<AppEnv>): Promise<string | undefined> {
  const tokens = c.req.queries("oauth_token");
  if (tokens?.length !== 1 || tokens[0]!.length > MAX_TOKEN_LENGTH) return undefined;
  try {
    return (await verifyAccessToken(c.env, tokens[0]!)).clientId;
  } catch (err) {
    if (err instanceof ApiError && !(err instanceof TryAgainLater)) return undefined;
    throw err;
  }
}
