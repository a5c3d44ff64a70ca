/**
 * The authorization request of GET and POST /oauth/authorize (RFC 6749 §4.1.1, PKCE RFC 7636),
 * read and judged in one place, and where a failure goes, by the spec's three rules:
 *
 * 1. `failure_redirect_uri`, when given and registered for the client;
 * 2. otherwise the flow's `redirect_uri`;
 * 3. when the given `redirect_uri` is not registered (or none is given), the client's default one.
 *
 * A URI is used only when registered for the client, exactly. With no such URI (no client, or a
 * client without a usable default), the failure is shown as a page instead. An OpenID Connect
 * request (`scope` has `openid`) must name its registered `redirect_uri` (Core §3.1.2.1), so rule
 * 3 is not for it: a missing or unregistered one is shown as a page, never sent anywhere.
 */
import type { ClientRecord } from "../db/queries/clients";
import { findClient } from "../db/queries/clients";
import type { Database } from "../db/client";
import type { Bindings } from "../env";
import type { RequestedClaims } from "../schemas/requested-claims";
import { allowedScopes, type ClaimName, parseScope, releasedClaims } from "./openid/claims";
import { type Scope, SUPPORTED_SCOPES } from "./openid/scopes";
import { isRegisteredRedirectUri } from "./redirect-uri";
import { namesThisApi } from "./tokens";

/** The parameters, as the request carried them (forms repeat them back as hidden fields). */
const AUTHORIZATION_PARAMETERS = [
  "client_id",
  "redirect_uri",
  "response_type",
  "state",
  "code_challenge",
  "code_challenge_method",
  "failure_redirect_uri",
  "scope",
  "view",
  "nonce",
  "prompt",
  "max_age",
  "login_hint",
  "ui_locales",
  "id_token_hint",
  "acr_values",
  "claims",
  "display",
] as const;
type Parameter = (typeof AUTHORIZATION_PARAMETERS)[number];

/** OpenID Connect's prompts, and `create` (OpenID Connect Prompt Create), which opens the sign-up view. */
export const PROMPTS = ["none", "login", "consent", "select_account", "create"] as const;
export type Prompt = (typeof PROMPTS)[number];
export const DISPLAYS = ["page", "popup", "touch", "wap"] as const;
/** A `max_age` in seconds: digits, at most ten of them. */
const MAX_AGE = /^\d{1,10}$/;

/** Longer than any client id, registered redirect URI or state a client needs. */
export const MAX_PARAMETER_LENGTH = 2048;
/** An S256 challenge is the base64url SHA-256 of the verifier: 43 characters. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/**
 * Which sign-in page the request opens with: the login page, or, as SPiD's /flow/signup,
 * /flow/signin and /flow/password do, its sign-up, link or forgotten-password view
 * (`view=signup|signin|password`).
 */
export type SignInView = "login" | "signup" | "signin" | "password";
const VIEWS: readonly string[] = ["signup", "signin", "password"];

export type AuthorizationRequest = {
  client: ClientRecord;
  view: SignInView;
  redirectUri: string;
  state: string | undefined;
  codeChallenge: string | undefined;
  /** The scope granted when the request succeeds: what it asked for, all of it ours. */
  scopes: Scope[];
  nonce: string | undefined;
  prompts: ReadonlySet<Prompt>;
  /** Seconds since the sign-in beyond which the user must sign in again. */
  maxAge: number | undefined;
  /** The Authentication Context Classes asked for, in order of preference (oauth/authentication-context.ts). */
  acrValues: string[];
  loginHint: string | undefined;
  /** Verified later, against the session it names: oauth/openid/id-token-hint.ts. */
  idTokenHint: string | undefined;
  /** The user's claims asked for by name (the `claims` parameter), for the ID token and userinfo. */
  claims: RequestedClaims;
  /** The parameters given, to carry on through the login and consent forms and sign-in links. */
  parameters: Record<string, string>;
};

export type AuthorizationError = { error: string; description: string };

export type JudgedRequest =
  | { outcome: "valid"; request: AuthorizationRequest; failureUri: string }
  /** A failure to send back to `uri`, with `state` when it was readable. */
  | { outcome: "redirect"; uri: string; state: string | undefined; failure: AuthorizationError }
  /**
   * A failure with no registered URI to send it to; `client` when the client is known, whose
   * registered home page (`client_uri`) is then the page's way back, in its colours.
   */
  | {
      outcome: "page";
      failure: AuthorizationError;
      client?: Pick<ClientRecord, "name" | "clientUri" | "css" | "logoUri">;
    };

export async function judgeAuthorizationRequest(
  env: Bindings,
  db: Database,
  valuesOf: (name: string) => string[],
): Promise<JudgedRequest> {
  // A parameter sent without a value is as if omitted (OpenID Connect Core §3.1.2.1).
  const single = (name: Parameter) => {
    const values = valuesOf(name);
    return { value: values.length === 1 && values[0] !== "" ? values[0] : undefined, repeated: values.length > 1 };
  };
  const { value: clientId } = single("client_id");
  const client = clientId && clientId.length <= MAX_PARAMETER_LENGTH ? await findClient(db, clientId) : undefined;
  if (!client) {
    return { outcome: "page", failure: { error: "invalid_request", description: "Unknown or missing client_id" } };
  }
  const registered = (uri: string | undefined) =>
    uri !== undefined &&
    uri.length <= MAX_PARAMETER_LENGTH &&
    isRegisteredRedirectUri(client.redirectUris, uri, client.publicClient)
      ? uri
      : undefined;

  const given = single("redirect_uri");
  const flowUri = registered(given.value);
  const defaultUri = registered(client.defaultRedirectUri ?? undefined);
  const failureGiven = single("failure_redirect_uri");
  const failureUri = registered(failureGiven.value);
  const failureInvalid = failureGiven.repeated || (failureGiven.value !== undefined && !failureUri);

  const stateParameter = single("state");
  const state =
    stateParameter.value !== undefined && stateParameter.value.length <= MAX_PARAMETER_LENGTH
      ? stateParameter.value
      : undefined;
  // Rules 1 to 3: an unregistered failure URI is itself a failure, sent by rule 2 or 3.
  const target = (failureInvalid ? undefined : failureUri) ?? flowUri ?? defaultUri;
  const fail = (error: string, description: string): JudgedRequest =>
    target === undefined
      ? { outcome: "page", failure: { error, description }, client }
      : { outcome: "redirect", uri: target, state, failure: { error, description } };

  const openId = valuesOf("scope").some((scope) => scope.split(" ").includes("openid"));
  // Core §3.1.2.1: an OpenID request names its registered redirect URI; rule 3 is not for it.
  if (openId && (given.repeated || !flowUri)) {
    const problem =
      given.value === undefined
        ? "Parameter 'redirect_uri' is missing"
        : "The redirect URI is not registered for this client";
    return {
      outcome: "page",
      failure: { error: given.value === undefined ? "invalid_request" : "redirect_uri_mismatch", description: problem },
      client,
    };
  }
  if (given.repeated || (given.value !== undefined && !flowUri)) {
    return fail("redirect_uri_mismatch", "The redirect URI is not registered for this client");
  }
  if (given.value === undefined && !defaultUri) {
    return fail("invalid_request", "Parameter 'redirect_uri' is missing and the client has no default");
  }
  if (failureInvalid) {
    return fail("redirect_uri_mismatch", "The failure redirect URI is not registered for this client");
  }
  const repeated = AUTHORIZATION_PARAMETERS.find((name) => single(name).repeated);
  if (repeated) return fail("invalid_request", `Parameter '${repeated}' is repeated`);
  if (stateParameter.value !== undefined && state === undefined) {
    return fail("invalid_request", "Parameter 'state' is too long");
  }
  const responseType = single("response_type").value;
  if (responseType === undefined) return fail("invalid_request", "Parameter 'response_type' is missing");
  if (responseType !== "code") return fail("unsupported_response_type", "Only response_type=code is supported");
  if (!client.grantTypes.includes("authorization_code")) {
    return fail("unauthorized_client", "The client is not allowed to use the authorization code grant");
  }
  if (valuesOf("request").some((value) => value !== ""))
    return fail("request_not_supported", "Request objects are not supported");
  if (valuesOf("request_uri").some((value) => value !== "")) {
    return fail("request_uri_not_supported", "Request objects by reference are not supported");
  }
  // RFC 8707: the tokens of a code are for this API; a resource must name it.
  if (!valuesOf("resource").every((resource) => namesThisApi(env, resource))) {
    return fail("invalid_target", "The resource is not this API");
  }
  const scope = parseScope(single("scope").value);
  if ("unsupported" in scope) return fail("invalid_scope", "The requested scope is not supported");
  if (!allowedScopes(client.scope, scope.scopes)) {
    return fail("invalid_scope", "The requested scope is not registered for this client");
  }
  const prompts = new Set((single("prompt").value ?? "").split(" ").filter((v) => v !== ""));
  if (![...prompts].every((prompt) => (PROMPTS as readonly string[]).includes(prompt))) {
    return fail("invalid_request", "Parameter 'prompt' has an unsupported value");
  }
  if (prompts.has("none") && prompts.size > 1) {
    return fail("invalid_request", "Parameter 'prompt' cannot combine none with other values");
  }
  const maxAge = single("max_age").value;
  if (maxAge !== undefined && !MAX_AGE.test(maxAge)) {
    return fail("invalid_request", "Parameter 'max_age' must be a number of seconds");
  }
  const display = single("display").value;
  if (display !== undefined && !(DISPLAYS as readonly string[]).includes(display)) {
    return fail("invalid_request", "Parameter 'display' must be page, popup, touch or wap");
  }
  const tooLong = (["nonce", "login_hint", "id_token_hint", "claims", "acr_values"] as const).find(
    (name) => (single(name).value?.length ?? 0) > MAX_PARAMETER_LENGTH,
  );
  if (tooLong) return fail("invalid_request", `Parameter '${tooLong}' is too long`);
  const claims = requestedClaims(single("claims").value, client.scope);
  if (claims === null) return fail("invalid_request", "Parameter 'claims' must be a JSON object of claim requests");

  const view = prompts.has("create") ? "signup" : single("view").value;
  if (view !== undefined && !VIEWS.includes(view)) {
    return fail("invalid_request", "Parameter 'view' must be signup, signin or password");
  }

  const codeChallenge = single("code_challenge").value;
  const method = single("code_challenge_method").value;
  if (codeChallenge === undefined) {
    if (method !== undefined) return fail("invalid_request", "Parameter 'code_challenge' is missing");
    if (client.publicClient) return fail("invalid_request", "PKCE is required: send code_challenge with S256");
  } else {
    if (method !== "S256") return fail("invalid_request", "Parameter 'code_challenge_method' must be S256");
    if (!S256_CHALLENGE.test(codeChallenge)) return fail("invalid_request", "Parameter 'code_challenge' is invalid");
  }

  const parameters: AuthorizationRequest["parameters"] = {};
  for (const name of AUTHORIZATION_PARAMETERS) {
    const { value } = single(name);
    if (value !== undefined) parameters[name] = value;
  }
  return {
    outcome: "valid",
    request: {
      client,
      view: (view as SignInView | undefined) ?? "login",
      redirectUri: flowUri ?? defaultUri!,
      state,
      codeChallenge,
      scopes: scope.scopes,
      nonce: single("nonce").value,
      prompts: prompts as Set<Prompt>,
      maxAge: maxAge === undefined ? undefined : Number(maxAge),
      acrValues: (single("acr_values").value ?? "").split(" ").filter((value) => value !== ""),
      loginHint: single("login_hint").value,
      idTokenHint: single("id_token_hint").value,
      claims,
      parameters,
    },
    failureUri: target!,
  };
}

/**
 * The claim names a `claims` parameter (Core §5.5) asks for in the ID token and at userinfo,
 * essential or voluntary alike (both are given when the user has them), of those the scopes the
 * client may ask for release (others are left out, so that no claim passes its registered scope);
 * null when it is not a JSON object whose `id_token` and `userinfo` members, where present, are
 * objects.
 */
function requestedClaims(value: string | undefined, clientScope: string | null): RequestedClaims | null {
  if (value === undefined) return { idToken: [], userinfo: [] };
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return null;
  }
  const isObject = (v: unknown): v is Record<string, unknown> =>
    typeof v === "object" && v !== null && !Array.isArray(v);
  if (!isObject(parsed)) return null;
  const { id_token: idToken = {}, userinfo = {} } = parsed;
  if (!isObject(idToken) || !isObject(userinfo)) return null;
  const allowed = releasedClaims(clientScope?.split(" ") ?? SUPPORTED_SCOPES);
  const named = (member: Record<string, unknown>) =>
    Object.keys(member).filter((name) => allowed.has(name as ClaimName));
  return { idToken: named(idToken), userinfo: named(userinfo) };
}

/**
 * `uri` with the response parameters added to its query (RFC 6749 §4.1.2), its own query kept
 * byte for byte: registered URIs have no fragment.
 */
export function withResponseParameters(uri: string, parameters: Record<string, string | undefined>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(parameters)) {
    if (value !== undefined) query.append(name, value);
  }
  return `${uri}${uri.includes("?") ? "&" : "?"}${query}`;
}
