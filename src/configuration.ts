/**
 * The Worker's secrets, checked before the first request an isolate serves with them (index.ts),
 * so that a missing or wrong one is reported instead of failing as a bare 500 or, worse, as every
 * client's "Client authentication failed": /api/2/status names the problem, the log shows it once,
 * and each endpoint that needs the secret answers 503 (errors.ts ConfigurationError).
 *
 * - TOKEN_SIGNING_KEYS is parsed and imported (oauth/tokens.ts keeps the keys, or the problem,
 *   which every use of the keys then throws).
 * - DATA_PROTECTION_KEY is checked for its form, then its fingerprint against the one the database
 *   recorded at its first import: one D1 read. A key that does not match is refused
 *   (security/data-protection.ts), so every use of it throws the problem. A database imported
 *   before fingerprints were kept has none: then a client's sealed signing secret tells (AES-GCM
 *   opens under its own key only), and a key it proves is recorded, so that a later import under
 *   another key is refused rather than recorded in its place.
 *
 * Verdicts are kept per secret value: after the first request a check is two map look-ups, and an
 * env with other values (a test's) gets verdicts of its own. Only a database without a fingerprint
 * and without a sealed secret to prove the key by, or one that could not be read, is asked again, after
 * RECHECK_MS: an import in the meantime is then seen without a new deployment. A recorded
 * fingerprint never changes (the migration's trigger), so a verdict on it is final.
 */
import { openDatabase } from "./db/client";
import { findKeyFingerprint, findSomeSealedSecret, recordKeyFingerprint } from "./db/queries/key-fingerprints";
import type { Bindings } from "./env";
import { logUnlessPlatformFault } from "./errors";
import { recentFaults } from "./platform/health";
import { signingKeysProblem } from "./oauth/tokens";
import {
  dataProtectionKeyProblem,
  keyFingerprint,
  openSecret,
  refuseDataProtectionKey,
} from "./security/data-protection";

const RECHECK_MS = 60_000;
const KEY_MISMATCH = "DATA_PROTECTION_KEY is not the key the database's data was imported under";

/** `problem` null when the secret is usable; `recheckAt` Infinity when the verdict is final. */
type Verdict = { problem: string | null; recheckAt: number };

const signingKeyVerdicts = new Map<string | undefined, string | null>();
const dataProtectionVerdicts = new Map<string | undefined, Verdict>();
const checks = new Map<string, Promise<void>>();
const NO_PROBLEMS: readonly string[] = [];

const current = (verdict: Verdict | undefined) =>
  verdict !== undefined && (verdict.recheckAt === Infinity || Date.now() < verdict.recheckAt);

/** Whether `env`'s secrets have verdicts still valid: the whole cost of the check on the hot path. */
export function configurationChecked(env: Bindings): boolean {
  return current(dataProtectionVerdicts.get(env.DATA_PROTECTION_KEY)) && signingKeyVerdicts.has(env.TOKEN_SIGNING_KEYS);
}

/** What is wrong with `env`'s secrets, as checked; empty when nothing is. Never a secret's value. */
export function configurationProblems(env: Bindings): readonly string[] {
  const signing = signingKeyVerdicts.get(env.TOKEN_SIGNING_KEYS);
  const dataProtection = dataProtectionVerdicts.get(env.DATA_PROTECTION_KEY)?.problem;
  if (!signing && !dataProtection) return NO_PROBLEMS;
  return [signing, dataProtection].filter((problem): problem is string => !!problem);
}

/** Checks `env`'s secrets and logs each problem found; concurrent first requests share one check. */
export function checkConfiguration(env: Bindings): Promise<void> {
  const key = JSON.stringify([env.TOKEN_SIGNING_KEYS, env.DATA_PROTECTION_KEY]);
  let check = checks.get(key);
  if (!check) {
    check = runCheck(env).finally(() => checks.delete(key));
    checks.set(key, check);
  }
  return check;
}

async function runCheck(env: Bindings): Promise<void> {
  if (!signingKeyVerdicts.has(env.TOKEN_SIGNING_KEYS)) {
    const problem = await signingKeysProblem(env.TOKEN_SIGNING_KEYS);
    signingKeyVerdicts.set(env.TOKEN_SIGNING_KEYS, problem);
    if (problem) report(problem);
  }
  const previous = dataProtectionVerdicts.get(env.DATA_PROTECTION_KEY);
  if (current(previous)) return;
  const verdict = await dataProtectionVerdict(env);
  dataProtectionVerdicts.set(env.DATA_PROTECTION_KEY, verdict);
  if (verdict.problem && verdict.problem !== previous?.problem) report(verdict.problem);
}

async function dataProtectionVerdict(env: Bindings): Promise<Verdict> {
  const secret = env.DATA_PROTECTION_KEY;
  const problem = dataProtectionKeyProblem(secret);
  if (problem) return { problem, recheckAt: Infinity };
  // While D1 fails, asking it would only hold the request up by another deadline.
  if (recentFaults(Date.now()).includes("D1")) return { problem: null, recheckAt: Date.now() + RECHECK_MS };
  const db = openDatabase(env.DB);
  let recorded: string | null;
  try {
    recorded = await findKeyFingerprint(db, "DATA_PROTECTION_KEY");
    if (recorded === null) {
      const sealed = await findSomeSealedSecret(db);
      if (sealed !== null && !(await opens(secret, sealed))) return mismatch(secret);
      if (sealed !== null) {
        await recordKeyFingerprint(db, "DATA_PROTECTION_KEY", await keyFingerprint(secret));
        recorded = await findKeyFingerprint(db, "DATA_PROTECTION_KEY");
      }
    }
  } catch (err) {
    // Not a verdict on the key: the endpoints go on, and will fail on D1 by themselves if it is down.
    logUnlessPlatformFault(
      "configuration: the DATA_PROTECTION_KEY fingerprint could not be read; trying again in a minute",
      err,
    );
    return { problem: null, recheckAt: Date.now() + RECHECK_MS };
  }
  if (recorded === null) return { problem: null, recheckAt: Date.now() + RECHECK_MS };
  if (recorded === (await keyFingerprint(secret))) return { problem: null, recheckAt: Infinity };
  return mismatch(secret);
}

function mismatch(secret: string): Verdict {
  refuseDataProtectionKey(secret, KEY_MISMATCH);
  return { problem: KEY_MISMATCH, recheckAt: Infinity };
}

async function opens(secret: string, sealed: string): Promise<boolean> {
  try {
    await openSecret(secret, sealed);
    return true;
  } catch {
    return false;
  }
}

function report(problem: string): void {
  console.error(`configuration: ${problem}; the endpoints that need it answer 503 until it is fixed`);
}
