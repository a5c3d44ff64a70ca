/**
 * The second factor of a sign-in (docs/factors.md): a TOTP authenticator's code, or one of the
 * recovery codes made with it. Enrolment shows a new secret and takes it only once a code of it
 * comes back; until then the secret lives sealed in the enrolment page itself, so showing the page
 * writes nothing. Codes are throttled as passwords are (sign-in-throttle.ts), per account, with no
 * lockout: a code is asked for only after the first factor, so a stranger never reaches it.
 */
import type { Context } from "hono";
import * as z from "zod/mini";
import {
  findTotpFactor,
  insertTotpFactor,
  raiseSessionMethod,
  replaceRecoveryCodes,
  takeTotpStep,
  useRecoveryCode,
} from "../../db/queries/second-factor";
import { violatesUnique } from "../../db/constraints";
import type { AppEnv, Bindings } from "../../env";
import { auditEntry, recordSignInFailure, type SignInClient } from "../../events/audit";
import { keyRing, openSecret, sealSecret } from "../../security/data-protection";
import { withSecondFactor } from "../authentication-context";
import type { SignedIn } from "../sessions";
import { throttledCheck, type ThrottledCheck } from "../sign-in-throttle";
import { newRecoveryCodes, recoveryCodeHash } from "./recovery-codes";
import { isTotpCode, newTotpSecret, qrCodeSvg, totpStep, totpUri } from "./totp";

/** How long an enrolment page's secret is taken: time to find the app and scan. */
const ENROLMENT_LIFETIME_SECONDS = 600;

const enrolmentSchema = z.object({ userId: z.number(), secret: z.string(), expires: z.number() });

/**
 * The enrolment page's secret, the sealed ticket the page carries it in, and its QR code, which
 * names this service (BASE_URL's host) and the user's address in the app: the secret of `shown`
 * (the ticket of the page shown before, after a mistyped code) while it is live, else a new one.
 */
export async function enrolment(
  env: Bindings,
  user: { id: number; email: string },
  now: number,
  shown?: string | null,
) {
  const live = shown ? await enrolmentSecret(env, shown, user.id, now) : null;
  const secret = live ?? newTotpSecret();
  const ticket = live
    ? shown!
    : await sealSecret(
        keyRing(env),
        JSON.stringify({ userId: user.id, secret, expires: now + ENROLMENT_LIFETIME_SECONDS }),
      );
  return { secret, ticket, qrCode: qrCodeSvg(totpUri(secret, new URL(env.BASE_URL).host, user.email)) };
}

/** The secret an enrolment ticket carries, when it is live and for `userId`; null for any other. */
async function enrolmentSecret(env: Bindings, ticket: string, userId: number, now: number): Promise<string | null> {
  try {
    const enrolment = enrolmentSchema.parse(JSON.parse(await openSecret(keyRing(env), ticket)));
    return enrolment.userId === userId && enrolment.expires > now ? enrolment.secret : null;
  } catch {
    return null;
  }
}

export type Enrolled =
  | { outcome: "enrolled"; recoveryCodes: string[] }
  /** The ticket is no live one of this user's: the page had expired. */
  | { outcome: "expired" }
  | { outcome: "wrong" }
  /** The user enrolled a factor meanwhile (another tab). */
  | { outcome: "enrolled already" };

/**
 * Enrols the factor the enrolment page showed, once `code` proves the app has it: the factor, ten
 * recovery codes and the session's sign-in, which now had a second factor, in one batch.
 */
export async function enrolSecondFactor(
  c: Context<AppEnv>,
  client: SignInClient,
  session: SignedIn,
  ticket: string,
  code: string,
  now: number,
): Promise<Enrolled> {
  const secret = await enrolmentSecret(c.env, ticket, session.userId, now);
  if (secret === null) return { outcome: "expired" };
  const step = totpStep(secret, code, now * 1000);
  if (step === null) return { outcome: "wrong" };
  const db = c.get("db")();
  const recoveryCodes = newRecoveryCodes();
  const hashes = await Promise.all(recoveryCodes.map((text) => recoveryCodeHash(session.userId, text)));
  const enrolment = { userId: session.userId, clientId: client.id, merchantId: client.merchantId, created: now };
  const method = withSecondFactor(session.method);
  try {
    await db.batch([
      insertTotpFactor(db, { ...enrolment, secretSealed: await sealSecret(keyRing(c.env), secret), lastStep: step }),
      ...replaceRecoveryCodes(db, enrolment, hashes as string[]),
      raiseSessionMethod(db, session.sessionHash, method),
      auditEntry(
        c,
        { actor: "user", clientId: client.id, merchantId: client.merchantId },
        { action: "user.factor.enrol", userId: session.userId, detail: { factor: "totp" } },
        now,
      ),
    ]);
  } catch (error) {
    if (violatesUnique(error, "totp_factors.user_id")) return { outcome: "enrolled already" };
    throw error;
  }
  return { outcome: "enrolled", recoveryCodes };
}

export type SecondFactorCheck =
  | Exclude<ThrottledCheck, { outcome: "passed" | "failed" }>
  | { outcome: "failed" }
  | { outcome: "passed"; factor: "totp" | "recovery-code" };

/**
 * Checks `code` (an authenticator's, or a recovery code) as `userId`'s second factor, throttled;
 * a code is taken once, so a replayed one fails, and each failure is recorded.
 */
export async function checkSecondFactor(
  c: Context<AppEnv>,
  client: SignInClient,
  userId: number,
  code: string,
  now: number,
): Promise<SecondFactorCheck> {
  const db = c.get("db")();
  const factor = isTotpCode(code) ? "totp" : "recovery-code";
  const checked = await throttledCheck(c, client.id, `second-factor:${userId}`, "browser", async () => {
    if (factor === "recovery-code") {
      const hash = await recoveryCodeHash(userId, code);
      return hash !== null && (await useRecoveryCode(db, userId, hash, now));
    }
    const stored = await findTotpFactor(db, userId);
    if (!stored) return false;
    const step = totpStep(await openSecret(keyRing(c.env), stored.secretSealed), code, now * 1000);
    return step !== null && step > stored.lastStep && (await takeTotpStep(db, userId, step));
  });
  if (checked.outcome === "failed") recordSignInFailure(c, client, userId, "wrong", now, "otp");
  if (checked.outcome === "throttled") return checked;
  return checked.outcome === "failed" ? { outcome: "failed" } : { outcome: "passed", factor };
}

/** The statement that records on the session, and the audit entry, that its sign-in had `factor` as its second. */
export function secondFactorGiven(
  c: Context<AppEnv>,
  client: SignInClient,
  session: SignedIn,
  factor: "totp" | "recovery-code",
  now: number,
) {
  const db = c.get("db")();
  return [
    raiseSessionMethod(db, session.sessionHash, withSecondFactor(session.method)),
    auditEntry(
      c,
      { actor: "user", clientId: client.id, merchantId: client.merchantId },
      { action: "signin.second-factor", userId: session.userId, detail: { factor } },
      now,
    ),
  ] as const;
}
