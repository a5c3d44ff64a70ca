/**
 * The audit trail's writer (docs/management.md "Audit trail"): an entry is a statement for the
 * batch of the write it records, so the two land together or not at all.
 */
import type { SQL } from "drizzle-orm";
import type { Context } from "hono";
import { insertAuditEvent } from "../db/queries/audit";
import { isConnectedToMerchant } from "../db/queries/users";
import type { AuditActor, SignInMethod } from "../db/schema";
import type { AppEnv } from "../env";
import { logUnlessPlatformFault } from "../errors";
import { clientIp } from "../http/ip";

/** Who acted: the client, in which right, and the merchant whose trail the entry is in. */
export type Actor = { actor: AuditActor; clientId: string; merchantId: number };

export type AuditRecord = {
  /** `user.status`, `user.logout`, `user.connection.withdraw`, ... (docs/management.md). */
  action: string;
  /** A number, or a statement's own subquery for a user the same batch makes. */
  userId?: number | SQL<number>;
  targetClientId?: string;
  /** Field names, statuses and counts; never a secret or a personal value (JSON, or a statement's own). */
  detail?: Record<string, unknown> | SQL<unknown>;
};

export function auditEntry(c: Context<AppEnv>, by: Actor, record: AuditRecord, now: number) {
  return insertAuditEvent(c.get("db")(), {
    at: now,
    merchantId: by.merchantId,
    clientId: by.clientId,
    actor: by.actor,
    action: record.action,
    userId: record.userId ?? null,
    targetClientId: record.targetClientId ?? null,
    ip: clientIp(c.req.raw),
    detail: record.detail ?? null,
  });
}

/** The client a person signs in at. */
export type SignInClient = { id: string; merchantId: number };

const byUser = (client: SignInClient): Actor => ({ actor: "user", clientId: client.id, merchantId: client.merchantId });

/** A client acting on its own tokens (revocation), in its own right. */
export const byClient = (client: SignInClient): Actor => ({
  actor: "client",
  clientId: client.id,
  merchantId: client.merchantId,
});

/** A sign-in's entry, for the batch that records the sign-in (its session, or its grant). */
export function signInEntry(
  c: Context<AppEnv>,
  client: SignInClient,
  userId: number,
  method: SignInMethod,
  now: number,
) {
  return auditEntry(c, byUser(client), { action: "signin.success", userId, detail: { method } }, now);
}

/** The user's consent to the client, given on its consent page, for the batch that connects them. */
export function consentEntry(c: Context<AppEnv>, client: SignInClient, userId: number, now: number) {
  return auditEntry(c, byUser(client), { action: "consent.grant", userId }, now);
}

/**
 * A failed sign-in's entry (`reason`: wrong, or the account's refusal), written off the answer: a
 * failure writes nothing else, and its answer never waits on the trail. It names the account, and
 * its refusal, only when the account is connected to the client's merchant: the trail of one
 * merchant never tells whose an address is elsewhere. The address itself is never recorded.
 */
export function recordSignInFailure(
  c: Context<AppEnv>,
  client: SignInClient,
  userId: number | null,
  reason: string,
  now: number,
  method: "pwd" | "otp" | "passkey" = "pwd",
): void {
  const db = c.get("db")();
  const record = async () => {
    const known = userId !== null && (await isConnectedToMerchant(db, client.merchantId, userId));
    const detail = { method, reason: known ? reason : "wrong" };
    await auditEntry(c, byUser(client), { action: "signin.failure", ...(known && { userId }), detail }, now).run();
  };
  c.executionCtx.waitUntil(
    record().catch((error: unknown) => logUnlessPlatformFault("sign-in failure not recorded", error)),
  );
}
