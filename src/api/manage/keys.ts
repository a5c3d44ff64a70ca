/**
 * POST /api/2/keys/reseal: a round of a data-protection key rotation (docs/operations.md "Rotating
 * the data-protection key"), the operator's alone. Each round re-seals a page of signing secrets
 * under the current key (and gives public clients, whose secret nobody knows, a hash under it),
 * then reports what still depends on the previous key: client secrets and registration tokens
 * until they are next presented, live sessions and refresh tokens until they end or are used, the
 * retry records of rotations for their day, links and codes for their minutes. When nothing does,
 * the round ends the rotation; `end=now` ends it whatever still does, which then stops working
 * once DATA_PROTECTION_KEY_PREVIOUS is removed.
 */
import type { Context } from "hono";
import { Hono } from "hono";
import { endKeyRotation, findKeyFingerprints } from "../../db/queries/key-fingerprints";
import {
  clientsSealedUnderOtherKeys,
  previousKeyDependencies,
  publicClientsUnderOtherKeys,
  replaceClientValues,
} from "../../db/queries/key-rotation";
import type { AppEnv } from "../../env";
import { ApiError, OAuthError } from "../../errors";
import { auditEntry } from "../../events/audit";
import { describeRoute, respond } from "../../http/container";
import { formatDatetime, nowInSeconds } from "../../http/datetime";
import { IDEMPOTENCY_KEY_SECONDS } from "../../http/idempotency";
import { validate } from "../../http/validation";
import { SIGNIN_LINK_LIFETIME_SECONDS } from "../../kv/signin-links";
import { requireToken } from "../../middleware/auth";
import { forgetClient } from "../../oauth/client-auth";
import { resealRequestSchema } from "../../schemas/management";
import { keyRotationSchema } from "../../schemas/responses/management";
import { randomToken } from "../../security/random-token";
import { keyFingerprint, keyId, keyRing, openSecret, protectSecret, sealSecret } from "../../security/data-protection";
import { callerAuthority } from "./authority";

/** Clients re-sealed per round: each is one statement of the round's batch. */
const RESEAL_PAGE = 50;
/**
 * How long after a rotation's start an isolate of the deployment before it may still write under
 * the previous key (a Worker's requests end within minutes of a new version; the time-based
 * counts below take this margin).
 */
const SWITCH_MARGIN_SECONDS = 600;

export const keyRoutes = new Hono<AppEnv>().post(
  "/keys/reseal",
  describeRoute({
    name: "Re-seal under the current data-protection key",
    controller: "api/manage/keys#reseal",
    description:
      "A round of a DATA_PROTECTION_KEY rotation (docs/operations.md): re-seals a page of signing secrets under the current key and reports what still depends on the previous one. When nothing does, the round ends the rotation (`rotation: ended`) and DATA_PROTECTION_KEY_PREVIOUS can be removed; `end=now` ends it at once, and whatever still depended on the previous key stops working when that secret goes. `npm run reseal` calls it until done. The operator's client only.",
    success: { data: keyRotationSchema },
  }),
  requireToken("keys", "server"),
  validate("form", resealRequestSchema),
  async (c) => {
    const authority = await callerAuthority(c);
    if (authority.actor !== "operator") {
      throw new OAuthError(401, "unauthorized_client", "Only the operator's client rotates the data-protection key");
    }
    const db = c.get("db")();
    const now = nowInSeconds();
    const recorded = await findKeyFingerprints(db);
    if (recorded.previous === null) return respond(c, { object: "KeyRotation", data: NO_ROTATION });
    await requireRotationKeys(c, recorded.current, recorded.previous.fingerprint);
    const ring = keyRing(c.env);
    const tag = `${await keyId(ring.current)}.`;
    const resealed = c.req.valid("form").end === "now" ? 0 : await resealPage(c, tag);
    const since = recorded.previous.since;
    const left = await previousKeyDependencies(db, tag, now, since + SWITCH_MARGIN_SECONDS, IDEMPOTENCY_KEY_SECONDS);
    const linksUntil = since + SWITCH_MARGIN_SECONDS + SIGNIN_LINK_LIFETIME_SECONDS;
    const done =
      left.signingSecrets === 0 &&
      left.clients.length === 0 &&
      left.sessions.count === 0 &&
      left.refreshTokens.count === 0 &&
      left.idempotencyKeys.count === 0 &&
      linksUntil <= now;
    const ended = done || c.req.valid("form").end === "now";
    const detail = { resealed, ended, ...(ended && !done && { endedEarly: true }) };
    await db.batch([
      auditEntry(c, authority, { action: "keys.reseal", detail }, now),
      ...(ended ? [endKeyRotation(db)] : []),
    ]);
    const until = (time: number | null) => (time === null ? null : formatDatetime(time));
    return respond(c, {
      object: "KeyRotation",
      data: {
        rotation: ended ? "ended" : "under-way",
        started: formatDatetime(since),
        resealed,
        previousKeyNeeded: !ended,
        remaining: {
          signingSecrets: left.signingSecrets,
          clients: left.clients,
          sessions: { count: left.sessions.count, until: until(left.sessions.until) },
          refreshTokens: { count: left.refreshTokens.count, until: until(left.refreshTokens.until) },
          idempotencyKeys: { count: left.idempotencyKeys.count, until: until(left.idempotencyKeys.until) },
          signInLinks: { until: linksUntil > now ? formatDatetime(linksUntil) : null },
        },
      },
    });
  },
);

const NONE = { count: 0, until: null };
const NO_ROTATION = {
  rotation: "none" as const,
  started: null,
  resealed: 0,
  previousKeyNeeded: false,
  remaining: {
    signingSecrets: 0,
    clients: [],
    sessions: NONE,
    refreshTokens: NONE,
    idempotencyKeys: NONE,
    signInLinks: { until: null },
  },
};

/** Refuses a round by a deployment that does not hold both of the rotation's keys. */
async function requireRotationKeys(c: Context<AppEnv>, current: string | null, previous: string) {
  const ring = keyRing(c.env);
  const holds =
    (await keyFingerprint(ring.current)) === current &&
    ring.previous !== undefined &&
    (await keyFingerprint(ring.previous)) === previous;
  if (!holds) {
    throw new ApiError(
      409,
      "invalid_request",
      "This deployment does not hold the rotation's keys: DATA_PROTECTION_KEY must be the new key and DATA_PROTECTION_KEY_PREVIOUS the one before it",
    );
  }
}

/** Re-seals a page of signing secrets, and re-hashes a page of public clients' unknown secrets; how many clients changed. */
async function resealPage(c: Context<AppEnv>, tag: string): Promise<number> {
  const db = c.get("db")();
  const ring = keyRing(c.env);
  const again = async (sealed: string | null) =>
    sealed === null || sealed.startsWith(tag) ? sealed : sealSecret(ring, await openSecret(ring, sealed));
  const sealed = await clientsSealedUnderOtherKeys(db, tag, RESEAL_PAGE);
  const publicClients = await publicClientsUnderOtherKeys(db, tag, RESEAL_PAGE);
  const resealed = await Promise.all(
    sealed.map(async (was) => ({
      was,
      values: {
        signingSecretSealed: await again(was.signingSecretSealed),
        previousSigningSecretSealed: await again(was.previousSigningSecretSealed),
      },
    })),
  );
  // A public client's secret is one nobody knows (registration.ts): a new one is as good.
  const rehashed = await Promise.all(
    publicClients.map(async (was) => ({ was, secretHash: await protectSecret(ring, randomToken()) })),
  );
  const writes = [
    ...resealed.map(({ was: { id, ...values }, values: sealedAgain }) =>
      replaceClientValues(db, id, values, sealedAgain),
    ),
    ...rehashed.map(({ was: { id, secretHash }, secretHash: hash }) =>
      replaceClientValues(db, id, { secretHash }, { secretHash: hash }),
    ),
  ];
  if (writes.length === 0) return 0;
  await db.batch(writes as [(typeof writes)[number], ...typeof writes]);
  for (const { id } of [...sealed, ...publicClients]) forgetClient(id);
  return new Set([...sealed, ...publicClients].map(({ id }) => id)).size;
}
