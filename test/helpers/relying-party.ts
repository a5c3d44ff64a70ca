/**
 * Relying parties of the OpenID Connect tests: a client with a back-channel logout endpoint at
 * `*.receiver.test` (vitest.config.ts keeps what arrives there), a browser signed in at it, and
 * what its endpoint received.
 */
import { env } from "cloudflare:workers";
import { vi } from "vitest";
import { Browser, expectPage, redirectParameters } from "./browser";
import { basicAuth, postForm } from "./http";
import { createClient, createUser } from "./seed";

export const CALLBACK = "https://rp.example/callback";
export const AFTER_LOGOUT = "https://rp.example/signed-out";
export const EVENT = "http://schemas.openid.net/event/backchannel-logout";
/** The local queue hands a batch to its consumer within a second (max_batch_timeout); room beside it. */
export const DELIVERED_WITHIN = { timeout: 5_000, interval: 100 };

let nextUser = 30_000 + Math.floor(Math.random() * 1000) * 20;

export async function rpClient(overrides: Record<string, unknown> = {}) {
  const id = crypto.randomUUID().slice(0, 8);
  const client = await createClient({
    redirectUris: [CALLBACK],
    grantTypes: ["authorization_code", "refresh_token"],
    autoApprove: true,
    enableSso: true,
    postLogoutRedirectUris: [AFTER_LOGOUT],
    backchannelLogoutUri: `https://rp-${id}.receiver.test/backchannel`,
    ...overrides,
  });
  return {
    ...client,
    backchannel: (overrides.backchannelLogoutUri as string) ?? `https://rp-${id}.receiver.test/backchannel`,
  };
}

/** A browser signed in at the client; the ID token its code got. */
export async function signedIn(client: { id: string; secret: string }, browser = new Browser(), extra = {}) {
  const user = await createUser(nextUser++, { clients: [] });
  const query = new URLSearchParams({
    client_id: client.id,
    redirect_uri: CALLBACK,
    response_type: "code",
    scope: "openid",
    state: "s",
    ...extra,
  });
  const page = await expectPage(await browser.get(`/oauth/authorize?${query}`), 200, "Sign in");
  const res = await browser.submit(page, { action: "login", email: user.email, password: user.password });
  const tokens = await postForm(
    "/oauth/token",
    { grant_type: "authorization_code", code: redirectParameters(res).params.get("code")!, redirect_uri: CALLBACK },
    basicAuth(client.id, client.secret),
  );
  const { id_token: idToken } = (await tokens.json()) as { id_token: string };
  return { browser, user, idToken };
}

/** The form bodies the client's back-channel endpoint received. */
export async function receivedAt(uri: string): Promise<URLSearchParams[]> {
  const all = (await (await env.RECEIVER.fetch("https://receiver/")).json()) as { url: string; body: string }[];
  return all.filter((request) => request.url === uri).map((request) => new URLSearchParams(request.body));
}

/** The logout tokens the endpoint `uri` received, once at least one has arrived. */
export function logoutTokensAt(uri: string): Promise<string[]> {
  return vi.waitFor(async () => {
    const forms = await receivedAt(uri);
    if (forms.length === 0) throw new Error("no logout token yet");
    return forms.map((form) => form.get("logout_token")!);
  }, DELIVERED_WITHIN);
}
