/**
 * `npm run reseal -- --url <service> [--end now]`: the rounds of a DATA_PROTECTION_KEY rotation
 * (docs/operations.md "Rotating the data-protection key"), through the operator's client, whose id
 * and secret come from OPERATOR_CLIENT_ID and OPERATOR_CLIENT_SECRET: no data-protection key in
 * the operator's shell. It calls POST /api/2/keys/reseal until nothing is left to re-seal, then
 * says what still depends on the previous key, or that the rotation has ended and
 * DATA_PROTECTION_KEY_PREVIOUS can be removed. `--end now` ends the rotation once the signing
 * secrets are re-sealed, whatever else still depends on the previous key (those sessions, tokens
 * and client secrets then stop working).
 */
import { parseArgs } from "node:util";

type Live = { count: number; until: string | null };
type Round = {
  rotation: "none" | "under-way" | "ended";
  started: string | null;
  resealsFrom: string | null;
  resealed: number;
  previousKeyNeeded: boolean;
  remaining: {
    signingSecrets: number;
    totpSecrets: number;
    clients: string[];
    sessions: Live;
    refreshTokens: Live;
    idempotencyKeys: Live;
    signInLinks: { until: string | null };
  };
};

const { values } = parseArgs({ options: { url: { type: "string" }, end: { type: "string" } } });
const id = process.env.OPERATOR_CLIENT_ID;
const secret = process.env.OPERATOR_CLIENT_SECRET;
if (!values.url || !id || !secret || (values.end !== undefined && values.end !== "now")) {
  console.error(
    "usage: OPERATOR_CLIENT_ID=… OPERATOR_CLIENT_SECRET=… npm run reseal -- --url https://accounts.example.com [--end now]",
  );
  process.exit(2);
}
const base = values.url.replace(/\/+$/, "");

async function post(path: string, body: Record<string, string>, headers: Record<string, string>) {
  const res = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(body),
  });
  const json = (await res.json().catch(() => null)) as Record<string, unknown> | null;
  if (!res.ok) {
    const error = (json?.error ?? json) as { error_description?: string } | null;
    throw new Error(`${path} answered ${res.status}: ${error?.error_description ?? "no description"}`);
  }
  return json!;
}

try {
  const token = await post(
    "/oauth/token",
    { grant_type: "client_credentials" },
    { Authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}` },
  );
  const auth = { Authorization: `Bearer ${token.access_token as string}` };
  let round: Round;
  let resealed = 0;
  do {
    round = (await post("/api/2/keys/reseal", values.end ? { end: values.end } : {}, auth)).data as Round;
    resealed += round.resealed;
  } while (round.rotation === "under-way" && round.resealed > 0);
  report(round, resealed);
} catch (err) {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
}

function report(round: Round, resealed: number): void {
  if (round.rotation === "none") {
    console.log("No key rotation is under way: nothing depends on a previous key.");
    return;
  }
  console.log(`Rotation started ${round.started}; ${resealed} client(s) re-sealed under the current key.`);
  if (round.rotation === "ended") {
    console.log(
      "The rotation has ended. Remove the previous key from each environment that had it:\n" +
        "  npx wrangler secret delete DATA_PROTECTION_KEY_PREVIOUS --env <environment>",
    );
    return;
  }
  const { remaining } = round;
  const lines = [
    "Still depending on the previous key (keep DATA_PROTECTION_KEY_PREVIOUS):",
    remaining.signingSecrets > 0 &&
      `  ${remaining.signingSecrets} signing secret(s) not yet re-sealed (re-sealing starts ${round.resealsFrom}: ` +
        "the switch margin, for isolates still on the previous key)",
    remaining.totpSecrets > 0 &&
      `  ${remaining.totpSecrets} authenticator secret(s) of users' second factors not yet re-sealed`,
    remaining.clients.length > 0 &&
      `  ${remaining.clients.length} client(s) whose secret or registration token was not presented since the ` +
        `rotation started (they move on their next use; or rotate their secret): ${remaining.clients.join(", ")}`,
    live("browser session(s)", remaining.sessions),
    live("refresh token(s)", remaining.refreshTokens),
    live("retry record(s) of an Idempotency-Key", remaining.idempotencyKeys),
    remaining.signInLinks.until &&
      `  sign-in links and codes made before the switch, until ${remaining.signInLinks.until}`,
    "Run this again later, or end the rotation now with `-- --end now`.",
  ];
  console.log(lines.filter(Boolean).join("\n"));
}

function live(what: string, { count, until }: Live): string | false {
  return count > 0 && `  ${count} ${what}, the last ending ${until}`;
}
