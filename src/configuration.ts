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
 * - A key rotation (docs/operations.md "Rotating the data-protection key") starts here: a new
 *   DATA_PROTECTION_KEY beside DATA_PROTECTION_KEY_PREVIOUS, the recorded key, records the new key
 *   and keeps the previous one's fingerprint until `npm run reseal` ends the rotation. Meanwhile an
 *   isolate still on the previous key alone is taken, and one without the previous key is told.
 *
 * Verdicts are kept per secret value: after the first request a check is two map look-ups, and an
 * env with other values (a test's) gets verdicts of its own. Only a database without a fingerprint
 * and without a sealed secret to prove the key by, or one that could not be read, is asked again, after
 * RECHECK_MS: an import in the meantime is then seen without a new deployment. A recorded
 * fingerprint never changes (the migration's trigger), so a verdict on it is final.
 */
import { openDatabase } from "./db/client";
import {
  findKeyFingerprints,
  findSomeSealedSecret,
  type RecordedKeys,
  recordKeyFingerprint,
  startKeyRotation,
} from "./db/queries/key-fingerprints";
import type { Bindings } from "./env";
import { logUnlessPlatformFault } from "./errors";
import { recentFaults } from "./platform/health";
import { signingKeysProblem } from "./oauth/tokens";
import {
  dataProtectionKeyProblem,
  acceptPreviousKey,
  keyFingerprint,
  openSecret,
  refuseDataProtectionKey,
} from "./security/data-protection";

const RECHECK_MS = 60_000;
const KEY_MISMATCH = "DATA_PROTECTION_KEY is not the key the database's data was imported under";
const PREVIOUS_KEY_NEEDED =
  "DATA_PROTECTION_KEY_PREVIOUS is not the previous key, which data is still protected under: set it back " +
  "until `npm run reseal` ends the rotation";
const PREVIOUS_KEY_LEFT =
  "DATA_PROTECTION_KEY_PREVIOUS is set, but no key rotation is under way: it reads nothing; delete it";
const ROTATION_UNFINISHED =
  "DATA_PROTECTION_KEY is a new key, but the rotation before it has not ended: put back that rotation's keys " +
  "until `npm run reseal` ends it";

/** `problem` null when the secret is usable; `recheckAt` Infinity when the verdict is final. */
type Verdict = { problem: string | null; recheckAt: number };

const signingKeyVerdicts = new Map<string | undefined, string | null>();
const dataProtectionVerdicts = new Map<string | undefined, Verdict>();
const checks = new Map<string, Promise<void>>();
const NO_PROBLEMS: readonly string[] = [];

/** The data-protection keys `env` holds, as one map key. */
const ringOf = (env: Bindings) => `${env.DATA_PROTECTION_KEY} ${env.DATA_PROTECTION_KEY_PREVIOUS ?? ""}`;

const current = (verdict: Verdict | undefined) =>
  verdict !== undefined && (verdict.recheckAt === Infinity || Date.now() < verdict.recheckAt);

/** Whether `env`'s secrets have verdicts still valid: the whole cost of the check on the hot path. */
export function configurationChecked(env: Bindings): boolean {
  return current(dataProtectionVerdicts.get(ringOf(env))) && signingKeyVerdicts.has(env.TOKEN_SIGNING_KEYS);
}

/** What is wrong with `env`'s secrets, as checked; empty when nothing is. Never a secret's value. */
export function configurationProblems(env: Bindings): readonly string[] {
  const signing = signingKeyVerdicts.get(env.TOKEN_SIGNING_KEYS);
  const dataProtection = dataProtectionVerdicts.get(ringOf(env))?.problem;
  if (!signing && !dataProtection) return NO_PROBLEMS;
  return [signing, dataProtection].filter((problem): problem is string => !!problem);
}

/** Checks `env`'s secrets and logs each problem found; concurrent first requests share one check. */
export function checkConfiguration(env: Bindings): Promise<void> {
  const key = JSON.stringify([env.TOKEN_SIGNING_KEYS, ringOf(env)]);
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
  const previous = dataProtectionVerdicts.get(ringOf(env));
  if (current(previous)) return;
  const verdict = await dataProtectionVerdict(env);
  dataProtectionVerdicts.set(ringOf(env), verdict);
  if (verdict.problem && verdict.problem !== previous?.problem) report(verdict.problem);
}

/** The verdict on the keys; a malformed previous key is told (and reads nothing), not refused. */
async function dataProtectionVerdict(env: Bindings): Promise<Verdict> {
  const sent = env.DATA_PROTECTION_KEY_PREVIOUS;
  const previous = sent && sent !== env.DATA_PROTECTION_KEY ? sent : undefined;
  const previousProblem = previous ? dataProtectionKeyProblem(previous, "DATA_PROTECTION_KEY_PREVIOUS") : null;
  const verdict = await currentKeyVerdict(env, previousProblem ? undefined : previous);
  return verdict.problem === null && previousProblem ? { ...verdict, problem: previousProblem } : verdict;
}

async function currentKeyVerdict(env: Bindings, previous: string | undefined): Promise<Verdict> {
  const secret = env.DATA_PROTECTION_KEY;
  const problem = dataProtectionKeyProblem(secret);
  if (problem) return { problem, recheckAt: Infinity };
  // While D1 fails, asking it would only hold the request up by another deadline.
  if (recentFaults(Date.now()).includes("D1")) return { problem: null, recheckAt: Date.now() + RECHECK_MS };
  const db = openDatabase(env.DB);
  let recorded: RecordedKeys;
  try {
    recorded = await findKeyFingerprints(db);
    const previousFingerprint = previous === undefined ? null : await keyFingerprint(previous);
    if (recorded.current === null) {
      // Nothing recorded yet: a sealed secret proves which key the data is under.
      const sealed = await findSomeSealedSecret(db);
      const underPrevious = previous !== undefined && (sealed === null || (await opens(previous, sealed)));
      const underCurrent = sealed !== null && (await opens(secret, sealed));
      if (sealed !== null && !underCurrent && !underPrevious) return mismatch(secret, KEY_MISMATCH);
      if (underCurrent || underPrevious) {
        const key = underCurrent ? secret : previous!;
        await recordKeyFingerprint(db, "DATA_PROTECTION_KEY", await keyFingerprint(key));
        recorded = await findKeyFingerprints(db);
      }
    }
    // A rotation starts from the recorded key.
    if (previousFingerprint !== null && recorded.previous === null && recorded.current === previousFingerprint) {
      await startKeyRotation(db, previousFingerprint, await keyFingerprint(secret), Math.floor(Date.now() / 1000));
      recorded = await findKeyFingerprints(db);
    }
    const verdict = await verdictOn(recorded, secret, previousFingerprint);
    const reading = verdict.problem === null && previousFingerprint === recorded.previous?.fingerprint;
    if (previous !== undefined) acceptPreviousKey(secret, previous, reading ? recorded.previous!.since : null);
    return verdict;
  } catch (err) {
    // Not a verdict on the key: the endpoints go on, and will fail on D1 by themselves if it is down.
    logUnlessPlatformFault(
      "configuration: the DATA_PROTECTION_KEY fingerprint could not be read; trying again in a minute",
      err,
    );
    return { problem: null, recheckAt: Date.now() + RECHECK_MS };
  }
}

/** The verdict on `secret` (and the previous key's fingerprint) against what the database recorded. */
async function verdictOn(recorded: RecordedKeys, secret: string, previous: string | null): Promise<Verdict> {
  const later = Date.now() + RECHECK_MS;
  if (recorded.current === null) return { problem: null, recheckAt: later };
  const fingerprint = await keyFingerprint(secret);
  if (fingerprint === recorded.current) {
    // Data may still be under the previous key: told (and asked again, for the rotation's end), not refused.
    if (recorded.previous !== null && previous !== recorded.previous.fingerprint) {
      return { problem: PREVIOUS_KEY_NEEDED, recheckAt: later };
    }
    if (recorded.previous === null && previous !== null) return { problem: PREVIOUS_KEY_LEFT, recheckAt: later };
    return { problem: null, recheckAt: recorded.previous === null ? Infinity : later };
  }
  // An isolate of before the rotation's switch: its key still reads and writes what it did.
  if (fingerprint === recorded.previous?.fingerprint) return { problem: null, recheckAt: later };
  return mismatch(secret, previous === recorded.current ? ROTATION_UNFINISHED : KEY_MISMATCH);
}

function mismatch(secret: string, problem: string): Verdict {
  refuseDataProtectionKey(secret, problem);
  return { problem, recheckAt: Infinity };
}

async function opens(secret: string, sealed: string): Promise<boolean> {
  try {
    await openSecret({ current: secret }, sealed);
    return true;
  } catch {
    return false;
  }
}

function report(problem: string): void {
  console.error(`configuration: ${problem}; the endpoints that need it answer 503 until it is fixed`);
}
