/**
 * The benchmark's baseline: a bare Hono worker with the service's benchmarked routes doing the
 * least each can (a fixed JSON body; signing one Ed25519 JWT; verifying one), so that the
 * service's ratio to it isolates the service's own work. Never deployed.
 */
import { Hono } from "hono";
import { type CryptoKey, importJWK, type JWK, jwtVerify, SignJWT } from "jose";

type Env = { TOKEN_SIGNING_KEYS: string };

let keys: Promise<{ privateKey: CryptoKey; publicKey: CryptoKey }> | undefined;
function keyPair(env: Env) {
  keys ??= (async () => {
    const [jwk] = JSON.parse(env.TOKEN_SIGNING_KEYS) as JWK[];
    const { d: _, ...publicJwk } = jwk!;
    return {
      privateKey: (await importJWK(jwk!, "EdDSA")) as CryptoKey,
      publicKey: (await importJWK(publicJwk, "EdDSA")) as CryptoKey,
    };
  })();
  return keys;
}

const app = new Hono<{ Bindings: Env }>();

app.get("/api/2/status", (c) => c.json({ data: { platform: "up" } }));

app.post("/oauth/token", async (c) => {
  await c.req.text();
  const { privateKey } = await keyPair(c.env);
  const token = await new SignJWT({ client_id: "baseline" })
    .setProtectedHeader({ alg: "EdDSA", typ: "at+jwt" })
    .setIssuedAt()
    .setExpirationTime("1h")
    .sign(privateKey);
  return c.json({ access_token: token, token_type: "Bearer" });
});

/** Every authenticated read: verify the token, answer a fixed body. */
for (const path of ["/api/2/clients", "/api/2/me", "/api/2/users", "/api/2/user/:userId"]) {
  app.get(path, async (c) => {
    if (!(await verified(c.env, c.req.header("Authorization")))) return c.json({ error: "invalid_token" }, 401);
    return c.json({ data: {} });
  });
}

/** A management write: verify the token, read the form, answer a fixed body (nothing is written). */
app.post("/api/2/user/:userId", async (c) => {
  if (!(await verified(c.env, c.req.header("Authorization")))) return c.json({ error: "invalid_token" }, 401);
  await c.req.text();
  return c.json({ data: {} });
});

async function verified(env: Env, authorization: string | undefined): Promise<boolean> {
  const { publicKey } = await keyPair(env);
  try {
    await jwtVerify(authorization?.slice("Bearer ".length) ?? "", publicKey);
    return true;
  } catch {
    return false;
  }
}

export default app;
