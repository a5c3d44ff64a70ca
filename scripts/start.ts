/**
 * npm start [-- --persist-to <dir>]: local secrets (first run), D1 migrations, demo data
 * (idempotent), the demo credentials, then `wrangler dev` on 127.0.0.1:$PORT (default 8787) with
 * local D1, KV and Durable Objects, kept in wrangler's default state directory or in <dir>. The
 * service's own address (BASE_URL) is http://localhost:$PORT, which reaches the same listener.
 */
import { parseArgs } from "node:util";
import { ensureDevVars, readDevVars } from "./lib/dev-vars";
import { DataProtectionKeyMismatch, ImportFileError, importIntoD1, readImportFile } from "./lib/import";
import { runWrangler, startWrangler } from "./lib/wrangler";

const DEMO_DATA = "data/demo.json";
const port = process.env.PORT ?? "8787";
// localhost, not 127.0.0.1: an IP address can be no WebAuthn relying party, and passkeys work here.
const baseUrl = `http://localhost:${port}`;
const persistTo = startOptions()["persist-to"];
const stateArgs = persistTo === undefined ? [] : ["--persist-to", persistTo];

const devVarsChange = await ensureDevVars();
if (devVarsChange) console.log(devVarsChange);

if (!(await runWrangler(["d1", "migrations", "apply", "DB", "--local", ...stateArgs])).ok) {
  console.error("Applying the D1 migrations failed.");
  process.exit(1);
}

try {
  const demo = await readImportFile(DEMO_DATA);
  await importIntoD1(demo, {
    remote: false,
    persistTo,
    dataProtectionKey: (await readDevVars()).DATA_PROTECTION_KEY!,
  });
  printCredentials(demo);
} catch (err) {
  if (err instanceof DataProtectionKeyMismatch) {
    // The local database outlived the .dev.vars it was filled under.
    const state = persistTo ?? ".wrangler/state";
    console.error(
      `The local database in ${state} was filled under another DATA_PROTECTION_KEY than .dev.vars's; ` +
        `nothing was written. Put back the .dev.vars it was filled under, or delete ${state} ` +
        "(local data only) to start afresh.",
    );
  } else {
    console.error(err instanceof ImportFileError ? `${DEMO_DATA} is invalid:\n  ${err.problems.join("\n  ")}` : err);
  }
  process.exit(1);
}

const dev = startWrangler(["dev", "--ip", "127.0.0.1", "--port", port, "--var", `BASE_URL:${baseUrl}`, ...stateArgs]);
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => dev.kill(signal));
dev.on("exit", (code) => process.exit(code ?? 0));

function printCredentials(demo: Awaited<ReturnType<typeof readImportFile>>): void {
  const rows = [
    "",
    `Demo data loaded from ${DEMO_DATA}. The service will listen on ${baseUrl}`,
    "",
    "Clients (client_id / client_secret, grant types):",
    ...demo.clients.map((c) => `  ${c.name}: ${c.id} / ${c.secret}  [${c.grantTypes.join(", ")}]${rightsOf(c)}`),
    "",
    "Users (username / password, status):",
    ...demo.users.filter((u) => u.password).map((u) => `  ${u.email} / ${u.password}  (status ${u.status})`),
    "",
    "Try:",
    `  curl ${baseUrl}/api/2/status`,
    `  curl -u ${demo.clients[0]?.id}:${demo.clients[0]?.secret} -d grant_type=client_credentials ${baseUrl}/oauth/token`,
    "",
  ];
  console.log(rows.join("\n"));
}

/** What a client may manage (docs/management.md): its merchant as an admin, everything as the operator. */
function rightsOf(client: { admin: boolean; universalDataAccess: boolean }): string {
  if (client.universalDataAccess) return "  operator: manages every merchant";
  return client.admin ? "  admin: manages its merchant" : "";
}

function startOptions() {
  try {
    return parseArgs({ options: { "persist-to": { type: "string" } } }).values;
  } catch (err) {
    console.error(`${err instanceof Error ? err.message : String(err)}\nusage: npm start [-- --persist-to <dir>]`);
    process.exit(1);
  }
}
