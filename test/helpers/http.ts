import { exports } from "cloudflare:workers";
import demo from "../../data/demo.json";
import { BASE } from "./base";
import { checkAgainstDocument } from "./openapi";

export { BASE };

/**
 * A request through the Worker's real fetch handler. Its response is checked against the
 * service's OpenAPI document (helpers/openapi.ts); a body the document does not describe fails
 * the test.
 */
export async function call(path: string, init: RequestInit = {}): Promise<Response> {
  const request = new Request(`${BASE}${path}`, init);
  const response = await exports.default.fetch(request.clone());
  await checkAgainstDocument(request, response);
  return response;
}

export function postForm(
  path: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<Response> {
  return call(path, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields).toString(),
  });
}

export function basicAuth(id: string, secret: string): Record<string, string> {
  return { Authorization: `Basic ${btoa(`${id}:${secret}`)}` };
}

export const [webClient, appClient, fjordClient] = demo.clients as [
  (typeof demo.clients)[number],
  (typeof demo.clients)[number],
  (typeof demo.clients)[number],
];
export const [ingrid, erik, kari] = demo.users as [
  (typeof demo.users)[number],
  (typeof demo.users)[number],
  (typeof demo.users)[number],
];

type TokenBody = Record<string, unknown> & { access_token: string };

export async function serverToken(
  client: { id: string; secret: string } = webClient,
  extra: Record<string, string> = {},
  headers: Record<string, string> = {},
): Promise<string> {
  const res = await postForm(
    "/oauth/token",
    { grant_type: "client_credentials", ...extra },
    { ...basicAuth(client.id, client.secret), ...headers },
  );
  if (res.status !== 200) throw new Error(`server token: ${res.status} ${await res.text()}`);
  return ((await res.json()) as TokenBody).access_token;
}

type PasswordClient = { id: string; secret: string; redirectUris: string[] };

export async function userTokenResponse(
  user: { email: string; password: string } = ingrid,
  client: PasswordClient = webClient,
  scope?: string,
): Promise<TokenBody> {
  const res = await postForm(
    "/oauth/token",
    {
      grant_type: "password",
      username: user.email,
      password: user.password,
      redirect_uri: client.redirectUris[0]!,
      ...(scope !== undefined && { scope }),
    },
    basicAuth(client.id, client.secret),
  );
  if (res.status !== 200) throw new Error(`user token: ${res.status} ${await res.text()}`);
  return (await res.json()) as TokenBody;
}

export async function userToken(
  user?: { email: string; password: string },
  client: PasswordClient = webClient,
  scope?: string,
): Promise<string> {
  return (await userTokenResponse(user, client, scope)).access_token;
}

export function bearer(token: string): Record<string, string> {
  return { Authorization: `Bearer ${token}` };
}

/** The response container, loosely typed for assertions. */
export type Container = {
  name: string;
  version: string;
  api: number;
  object: string;
  type: string;
  code: number;
  request: { limit: number; remaining: number; reset: number };
  debug: { route: { name: string; url: string; controller: string }; params: { options: unknown; where: unknown } };
  meta: unknown;
  error: {
    error: string;
    error_code: number;
    type: string;
    error_description: string;
    code: number;
    description: string;
  } | null;
  data: any;
};

export async function container(res: Response): Promise<Container> {
  return (await res.json()) as Container;
}

/** A 400 OAuth failure with `error`, and a description containing `description` when given. */
export async function expectOAuthError(res: Response, error: string, description?: string): Promise<void> {
  if (res.status !== 400) throw new Error(`expected 400 ${error}, got ${res.status} ${await res.clone().text()}`);
  const body = (await res.json()) as { error: string; error_code: number; type: string; error_description: string };
  if (body.error !== error || body.error_code !== 400 || body.type !== "OAuthException") {
    throw new Error(`expected ${error}, got ${JSON.stringify(body)}`);
  }
  if (description !== undefined && !body.error_description.includes(description)) {
    throw new Error(`expected a description containing "${description}", got "${body.error_description}"`);
  }
}

/** The claims of a JWT, read without verifying it (the Worker verifies; tests only look). */
export function claimsOf(token: string): Record<string, unknown> {
  const payload = token.split(".")[1]!.replace(/-/g, "+").replace(/_/g, "/");
  return JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(payload), (ch) => ch.charCodeAt(0))));
}
