/**
 * The load's clients and users, seeded into the service's D1 and signed in: each client's server
 * token and the user tokens its API calls carry.
 */
import type { Miniflare } from "miniflare";
import { hashPassword } from "../../../src/security/password";
import { fmt, importScript, seed, workerUrl } from "../bench-runtime";
import {
  CLIENT_SPECS,
  type ClientSpec,
  FIRST_USER_ID,
  FORM,
  loadUserEmail,
  MAX_WRONG_PER_ACCOUNT,
  PASSWORD,
  REDIRECT_URI,
  RIGHT_USERS,
  TOKEN_USERS_PER_CLIENT,
  WRONG_USERS,
} from "./plan";

/** A client of the load, signed in, with its API calls as the load sends and answers them. */
export type LoadClient = ClientSpec & {
  basic: string;
  serverToken: string;
  userTokens: { userId: number; token: string }[];
  sent: number;
  admitted: number;
  refused: number;
};

/** Seeds the load's clients and users, signs the clients in, and says what it set up. */
export async function setUpLoad(
  runtime: Miniflare,
  dataProtectionKey: string,
): Promise<{ url: string; clients: LoadClient[] }> {
  const started = performance.now();
  await seed(
    runtime,
    dataProtectionKey,
    CLIENT_SPECS.map((spec) => ({
      id: spec.id,
      secret: spec.secret,
      name: spec.name,
      merchantId: 10,
      redirectUris: [REDIRECT_URI],
      defaultRedirectUri: REDIRECT_URI,
      grantTypes: ["client_credentials", "password"],
      rateLimit: { limit: spec.quota, windowSeconds: 3600 },
    })),
  );
  await importLoadUsers(runtime, dataProtectionKey);
  const url = await workerUrl(runtime, "service");
  const clients: LoadClient[] = [];
  for (const [index, spec] of CLIENT_SPECS.entries()) clients.push(await signIn(url, spec, index));
  console.log(
    `Set up in ${((performance.now() - started) / 1000).toFixed(1)} s: ${clients.length} load clients ` +
      `(quotas ${clients.map((c) => fmt(c.quota)).join(", ")} per 3,600 s), ${RIGHT_USERS} users signing in ` +
      `with the right password, ${fmt(WRONG_USERS)} with wrong ones (at most ${MAX_WRONG_PER_ACCOUNT} each).`,
  );
  return { url, clients };
}

/** The client's server token, and user tokens of its TOKEN_USERS_PER_CLIENT users (the `index`th group). */
async function signIn(url: string, spec: ClientSpec, index: number): Promise<LoadClient> {
  const basic = `Basic ${Buffer.from(`${spec.id}:${spec.secret}`).toString("base64")}`;
  const client: LoadClient = {
    ...spec,
    basic,
    serverToken: "",
    userTokens: [],
    sent: 0,
    admitted: 0,
    refused: 0,
  };
  client.serverToken = (await token(url, basic, { grant_type: "client_credentials" })).access_token;
  for (let i = 0; i < TOKEN_USERS_PER_CLIENT; i++) {
    const userId = FIRST_USER_ID + index * TOKEN_USERS_PER_CLIENT + i;
    const answer = await token(url, basic, {
      grant_type: "password",
      username: loadUserEmail(userId),
      password: PASSWORD,
      redirect_uri: REDIRECT_URI,
    });
    client.userTokens.push({ userId, token: answer.access_token });
  }
  return client;
}

/**
 * The generated users, connected to every load client, imported without a password (the import
 * format hashes each one, PBKDF2 with 100,000 iterations), then given one hash of PASSWORD: the
 * Worker's check of it costs what it costs for any user.
 */
async function importLoadUsers(mf: Miniflare, dataProtectionKey: string): Promise<void> {
  const users = [];
  for (let n = 0; n < RIGHT_USERS + WRONG_USERS; n++) {
    const userId = FIRST_USER_ID + n;
    users.push({
      userId: String(userId),
      uuid: `00000000-0000-4000-9000-${userId.toString(16).padStart(12, "0")}`,
      status: 1,
      email: loadUserEmail(userId),
      name: { givenName: "Load", familyName: `User ${n}` },
      published: 1_700_000_000,
      updated: 1_700_000_000,
      clients: CLIENT_SPECS.map((spec) => spec.id),
    });
  }
  await importScript(mf, { users }, dataProtectionKey);
  const d1 = await mf.getD1Database("DB", "service");
  await d1
    .prepare("UPDATE users SET password_hash = ? WHERE id BETWEEN ? AND ?")
    .bind(await hashPassword(PASSWORD), FIRST_USER_ID, FIRST_USER_ID + RIGHT_USERS + WRONG_USERS - 1)
    .run();
}

async function token(url: string, basic: string, params: Record<string, string>) {
  const res = await fetch(`${url}/oauth/token`, {
    method: "POST",
    headers: { Authorization: basic, "Content-Type": FORM },
    body: new URLSearchParams(params),
  });
  if (!res.ok) throw new Error(`${params.grant_type} for the load: ${res.status} ${await res.text()}`);
  return (await res.json()) as { access_token: string };
}
