import { env } from "cloudflare:workers";
import demo from "../../data/demo.json";
import { openDatabase } from "../../src/db/client";
import { buildImportStatements } from "../../src/db/import";
import { refreshTokens } from "../../src/db/schema";
import { newRefreshToken, newRefreshTokenFamily } from "../../src/oauth/refresh-tokens";
import { type ImportFile, importFileSchema } from "../../src/schemas/import";

export { demo };

/** Imports a file the way `npm run db:import` does: validated, hashed, one batch. */
export async function importData(json: unknown): Promise<ImportFile> {
  const file = importFileSchema.parse(json);
  const db = openDatabase(env.DB);
  const [first, ...rest] = await buildImportStatements(db, file, env.DATA_PROTECTION_KEY);
  if (first) await db.batch([first, ...rest]);
  return file;
}

export async function seedDemoData(): Promise<void> {
  await importData(demo);
}

/** Imports a fresh client of merchant 10 (unique id, so tests never share its rate-limit window). */
export async function createClient(overrides: Record<string, unknown> = {}): Promise<{ id: string; secret: string }> {
  const id = crypto.randomUUID().replace(/-/g, "").slice(0, 24);
  const secret = `test-secret-${crypto.randomUUID()}`;
  await importData({
    clients: [
      {
        id,
        secret,
        name: `Test client ${id}`,
        merchantId: 10,
        redirectUris: ["https://test.example/callback"],
        grantTypes: ["client_credentials", "password"],
        ...overrides,
      },
    ],
  });
  return { id, secret };
}

/** Imports a user with a password, connected to the demo web client unless `overrides` say otherwise. */
export async function createUser(userId: number, overrides: Record<string, unknown> = {}) {
  const credentials = { email: `user${userId}@example.org`, password: "a long enough passphrase" };
  const row = {
    userId: String(userId),
    uuid: crypto.randomUUID(),
    status: 1,
    ...credentials,
    published: "2024-01-01 00:00:00",
    updated: "2024-01-01 00:00:00",
    clients: [demo.clients[0]!.id],
    ...overrides,
  };
  await importData({ users: [row] });
  return { ...credentials, row };
}

/**
 * A grant of the grant-row form (oauth/refresh-tokens.ts), as a sign-in wrote it before refresh
 * tokens carried their grant: its row, and its first token and family.
 */
export async function rowFormGrant(clientId: string, userId: number) {
  const now = Math.floor(Date.now() / 1000);
  const first = await newRefreshToken(env, now);
  const family = newRefreshTokenFamily();
  await openDatabase(env.DB).insert(refreshTokens).values({
    tokenHash: first.tokenHash,
    secretHash: first.secretHash,
    clientId,
    userId,
    family,
    created: now,
    expires: first.expires,
    scope: "",
  });
  return { refreshToken: first.token, family };
}
