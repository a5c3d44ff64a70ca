/**
 * The Hono app: request pipeline, route mounts, and the one place errors become responses.
 * Order matters: the body read (bounded) and its encoding fixed before any parsing;
 * the response format chosen before an /api error can be rendered.
 */
import { Hono } from "hono";
import type { Context } from "hono";
import { methodNotAllowed } from "hono/method-not-allowed";
import { getPath } from "hono/utils/url";
import { auditRoutes } from "./api/audit";
import { clientRoutes } from "./api/clients";
import { describeRoutes } from "./api/describe";
import { deviceRoutes } from "./api/devices";
import { digitalContentRoutes } from "./api/digital-contents";
import { documentationRoutes } from "./api/docs";
import { mailRoutes } from "./api/mail";
import { clientSettingsRoutes } from "./api/manage/client-settings";
import { clientManagementRoutes } from "./api/manage/clients";
import { keyRoutes } from "./api/manage/keys";
import { productManagementRoutes } from "./api/manage/products";
import { userManagementRoutes } from "./api/manage/user";
import { userPhoneRoutes } from "./api/manage/user-phone";
import { userProfileRoutes } from "./api/manage/user-profile";
import { signinRoutes } from "./api/signin";
import { meRoutes } from "./api/me";
import { productAccessRoutes } from "./api/product-access";
import { productRoutes } from "./api/products";
import { statusRoutes } from "./api/status";
import { userRoutes } from "./api/user";
import { userListRoutes } from "./api/users";
import { versionRoutes } from "./api/version";
import type { AppEnv } from "./env";
import { ApiError, toApiError, TryAgainLater } from "./errors";
import { API_VERSION, respondError } from "./http/container";
import { routingPath } from "./http/format";
import { attachDatabase, noSniff, readRequest, selectFormat, serverTiming } from "./middleware/request";
import { SIGN_IN_PATHS, signInWorker } from "./middleware/sign-in-worker";
import { signedResponses } from "./middleware/signing";
import { methodParameter } from "./http/reserved-parameters";
import { isBrowserPage, renderUnavailablePage } from "./pages/unavailable";
import { exchangeRoutes } from "./oauth/exchange";
import { authorizeRoutes } from "./oauth/authorize";
import { logoutRoutes } from "./oauth/logout";
import { accountRoutes } from "./oauth/account";
import { describeKeySet, metadataRoutes, oauthRoutes, protectedResourceMetadataUrl } from "./oauth/routes";
import { userinfoRoutes } from "./oauth/openid/userinfo";
import { registrationRoutes } from "./oauth/registration";
import { signinConfirmationRoutes } from "./oauth/signin-confirmation";
import { spidBrowserRoutes } from "./oauth/spid-browser-paths";
import { webviewRoutes } from "./oauth/webview";
import { publicKeySet } from "./oauth/tokens";

const API_BASE = `/api/${API_VERSION}`;

export const app = new Hono<AppEnv>({ getPath: (request) => routingPath(getPath(request)) });

app.use(noSniff, serverTiming, readRequest, attachDatabase);
for (const path of SIGN_IN_PATHS) app.use(path, signInWorker);
app.use("/api/*", selectFormat, signedResponses, methodParameter);
app.use("/oauth/*", methodParameter);
app.use(methodNotAllowed({ app, onMethodNotAllowed: (c, methods) => renderError(c, methodNotAllowedError(methods)) }));

app.route("/oauth", oauthRoutes);
app.route("/oauth", exchangeRoutes);
app.route("/oauth", webviewRoutes);
app.route("/oauth", logoutRoutes);
app.route("/oauth", authorizeRoutes);
app.route("/oauth", signinConfirmationRoutes);
app.route("/oauth", userinfoRoutes);
app.route("/oauth", registrationRoutes);
app.route("/oauth", accountRoutes);
app.route("/", spidBrowserRoutes);
app.route("/.well-known", metadataRoutes);
app.get("/.well-known/jwks.json", describeKeySet(), async (c) =>
  c.json(await publicKeySet(c.env), 200, { "Cache-Control": "public, max-age=300" }),
);
app.route(API_BASE, statusRoutes);
app.route(API_BASE, versionRoutes);
app.route(API_BASE, clientRoutes);
app.route(API_BASE, meRoutes);
app.route(API_BASE, productRoutes);
app.route(API_BASE, digitalContentRoutes);
app.route(API_BASE, deviceRoutes);
app.route(API_BASE, mailRoutes);
app.route(API_BASE, signinRoutes);
app.route(API_BASE, userListRoutes);
app.route(API_BASE, userRoutes);
app.route(API_BASE, productAccessRoutes);
app.route(API_BASE, userManagementRoutes);
app.route(API_BASE, userProfileRoutes);
app.route(API_BASE, userPhoneRoutes);
app.route(API_BASE, clientManagementRoutes);
app.route(API_BASE, clientSettingsRoutes);
app.route(API_BASE, productManagementRoutes);
app.route(API_BASE, auditRoutes);
app.route(API_BASE, keyRoutes);
app.route(API_BASE, describeRoutes);
app.route(`${API_BASE}/oauth`, exchangeRoutes);
app.route(
  API_BASE,
  documentationRoutes(() => app.routes),
);

app.notFound((c) => renderError(c, notFoundError(c.req.path)));
app.onError((err, c) => renderError(c, toApiError(err)));

/**
 * The spec's error body: in the container under /api, bare JSON elsewhere (OAuth); a browser
 * page's 503 (the platform failed, or the service is misconfigured) is a page that says try again.
 */
function renderError(c: Context<AppEnv>, err: ApiError): Response | Promise<Response> {
  if (c.req.path.startsWith("/api/")) return withResourceMetadata(c, respondError(c, err));
  if (err instanceof TryAgainLater && isBrowserPage(c.req.path)) return renderUnavailablePage(c, err);
  return c.json(err.body, err.status as 400, { "Cache-Control": "no-store", ...err.headers });
}

/**
 * An API 401 tells the client where this API's protected resource metadata is (RFC 9728 §5.1),
 * beside the challenge's error, so that a client given only the API's URL finds its way to sign in.
 */
function withResourceMetadata(c: Context<AppEnv>, res: Response): Response {
  if (res.status === 401) {
    const challenge = res.headers.get("WWW-Authenticate") ?? "Bearer";
    const parameters = challenge.replace(/^Bearer\s*/i, "");
    const metadata = `resource_metadata="${protectedResourceMetadataUrl(c.env.BASE_URL)}"`;
    res.headers.set("WWW-Authenticate", `Bearer ${metadata}${parameters ? `, ${parameters}` : ""}`);
  }
  return res;
}

function notFoundError(path: string): ApiError {
  const version = /^\/api\/([^/]+)/.exec(path)?.[1];
  if (version !== undefined && version !== String(API_VERSION)) {
    return new ApiError(404, "invalid_request", `This API version is not supported; use ${API_BASE}`);
  }
  return new ApiError(404, "invalid_request", "No endpoint at this path");
}

function methodNotAllowedError(methods: string[]): ApiError {
  const allow = methods.join(", ");
  return new ApiError(405, "invalid_request", `Method not allowed; use ${allow}`, { Allow: allow });
}
