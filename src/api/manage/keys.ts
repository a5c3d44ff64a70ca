/**
 * POST /api/2/keys/reseal: a round of a data-protection key rotation (docs/operations.md "Rotating
 * the data-protection key"), the operator's alone. Each round re-seals a page of signing secrets
 * under the current key (and gives public clients, whose secret nobody knows, a hash under it),
 * then reports what still depends on the previous key: client secrets and registration tokens
 * until they are next presented, live sessions and refresh tokens until they end or are used, the
 * retry records of rotations for their day, links and codes for their minutes. When nothing does,
 * the round ends the rotation; `end=now` ends it once the signing secrets are re-sealed (they have
 * no other copy), whatever else still depends on the previous key, which then stops working.
 */
import type { BatchItem } from "drizzle-orm/batch";
import type { Context } from "hono";
import { Hono } from "hono";
import { endKeyRotation, findKeyFingerprints } from "../../db/queries/key-fingerprints";
import {
  type SealedClient,
  clientsSealedUnderOtherKeys,
  previousKeyDependencies,
  publicClientsUnderOtherKeys,
  replaceClientValues,
  replaceTotpSecret,
  totpSecretsUnderOtherKeys,
} from "../../db/queries/key-rotation";
import type { AppEnv } from "../../env";
import { ApiError, OAuthError } from "../../errors";
import { auditEntry } from "../../events/audit";
import { describeRoute, respond } from "../../http/container";
import { formatDatetime, nowInSeconds } from "../../http/datetime";
import { IDEMPOTENCY_KEY_SECONDS } from "../../http/idempotency";
import { validate } from "../../http/validation";
import { SIGNIN_LINK_LIFETIME_SECONDS } from "../../kv/signin-links";
import { PHONE_CODE_LIFETIME_SECONDS } from "./user-phone";
import { requireToken } from "../../middleware/auth";
import { forgetClient } from "../../oauth/client-auth";
import { resealRequestSchema } from "../../schemas/management";
import { keyRotationSchema } from "../../schemas/responses/management";
import { randomToken } from "../../security/random-token";
import {
  acceptPreviousKey,
  keyFingerprint,
  keyId,
  keyRing,
  movesToCurrentKey,
  openSecret,
  protectSecret,
  SWITCH_MARGIN_SECONDS,
  sealSecret,
} from "../../security/data-protection";
import { callerAuthority } from "./authority";

/** Clients re-sealed per round: each is one statement of the round's batch. */
const RESEAL_PAGE = 50;
/** Pages looked through per round for secrets that open: past those that open under neither key. */
const MAX_PAGES = 10;

export const keyRoutes = new Hono<AppEnv>().post(
  "/keys/reseal",
  describeRoute({
    name: "Re-seal under the current data-protection key",
    controller: "api/manage/keys#reseal",
    description:
      "A round of a DATA_PROTECTION_KEY rotation (docs/operations.md): re-seals a page of signing secrets under the current key and reports what still depends on the previous one. Re-sealing starts 10 minutes after the switch (`resealsFrom`), while isolates on the previous key alone may still serve. When nothing depends on the previous key, the round ends the rotation (`rotation: ended`) and DATA_PROTECTION_KEY_PREVIOUS can be removed; `end=now` ends it as soon as every signing secret is re-sealed, and whatever else still depended on the previous key stops working. `npm run reseal` calls it until done. The operator's client only.",
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
    const since = recorded.previous.since;
    // Not before the switch margin: isolates on the previous key alone may still read them.
    const resealsFrom = since + SWITCH_MARGIN_SECONDS;
    const resealedEntry = (resealed: number) =>
      auditEntry(c, authority, { action: "keys.reseal", detail: { resealed } }, now);
    const resealed = movesToCurrentKey(ring, now) ? await resealPage(c, tag, now, resealedEntry) : 0;
    const left = await previousKeyDependencies(db, tag, now, resealsFrom, IDEMPOTENCY_KEY_SECONDS);
    const linksUntil = resealsFrom + Math.max(SIGNIN_LINK_LIFETIME_SECONDS, PHONE_CODE_LIFETIME_SECONDS);
    const done =
      left.signingSecrets === 0 &&
      left.totpSecrets === 0 &&
      left.clients.length === 0 &&
      left.sessions.count === 0 &&
      left.refreshTokens.count === 0 &&
      left.idempotencyKeys.count === 0 &&
      linksUntil <= now;
    // Never before every sealed secret is re-sealed: a signing secret or an authenticator's has no other copy.
    const resealedAll = left.signingSecrets === 0 && left.totpSecrets === 0;
    const ended = done || (c.req.valid("form").end === "now" && resealedAll);
    if (ended) {
      const detail = { early: !done };
      await db.batch([endKeyRotation(db), auditEntry(c, authority, { action: "keys.rotation.end", detail }, now)]);
      // This isolate reads with the previous key no more at once; the others within their minute.
      acceptPreviousKey(ring.current, ring.previous!, null);
    }
    const until = (time: number | null) => (time === null ? null : formatDatetime(time));
    return respond(c, {
      object: "KeyRotation",
      data: {
        rotation: ended ? "ended" : "under-way",
        started: formatDatetime(since),
        resealsFrom: formatDatetime(resealsFrom),
        resealed,
        previousKeyNeeded: !ended,
        remaining: {
          signingSecrets: left.signingSecrets,
          totpSecrets: left.totpSecrets,
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
  resealsFrom: null,
  resealed: 0,
  previousKeyNeeded: false,
  remaining: {
    signingSecrets: 0,
    totpSecrets: 0,
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

/**
 * Re-seals a page of signing secrets, and re-hashes a page of public clients' unknown secrets; how
 * many clients changed. A secret that opens under neither key (written by hand under another) is
 * left as it is and logged: it still counts among those to re-seal, until the client's signing
 * secret is rotated (POST /api/2/client/{id}/signing-secret).
 */
async function resealPage(
  c: Context<AppEnv>,
  tag: string,
  now: number,
  auditEntryOf: (resealed: number) => BatchItem<"sqlite">,
): Promise<number> {
  const db = c.get("db")();
  const ring = keyRing(c.env);
  const again = async (sealed: string | null) =>
    sealed === null || sealed.startsWith(tag) ? sealed : sealSecret(ring, await openSecret(ring, sealed));
  const resealed: {
    was: SealedClient;
    values: Pick<SealedClient, "signingSecretSealed" | "previousSigningSecretSealed">;
  }[] = [];
  let after = "";
  for (let page = 0; page < MAX_PAGES && resealed.length === 0; page++) {
    const sealed = await clientsSealedUnderOtherKeys(db, tag, now, after, RESEAL_PAGE);
    for (const was of sealed) {
      try {
        const values = {
          signingSecretSealed: await again(was.signingSecretSealed),
          previousSigningSecretSealed:
            (was.previousSigningSecretExpires ?? 0) > now ? await again(was.previousSigningSecretSealed) : null,
        };
        resealed.push({ was, values });
      } catch {
        console.error(`keys: the signing secret of client ${was.id} opens under neither key; rotate it`);
      }
    }
    if (sealed.length < RESEAL_PAGE) break;
    after = sealed.at(-1)!.id;
  }
  // A public client's secret is one nobody knows (registration.ts): a new one is as good.
  const publicClients = await publicClientsUnderOtherKeys(db, tag, RESEAL_PAGE);
  const rehashed = await Promise.all(
    publicClients.map(async (was) => ({ was, secretHash: await protectSecret(ring, randomToken()) })),
  );
  const writes = [
    ...resealed.map(({ was, values }) =>
      replaceClientValues(
        db,
        was.id,
        { signingSecretSealed: was.signingSecretSealed, previousSigningSecretSealed: was.previousSigningSecretSealed },
        values,
      ),
    ),
    ...rehashed.map(({ was: { id, secretHash }, secretHash: hash }) =>
      replaceClientValues(db, id, { secretHash }, { secretHash: hash }),
    ),
  ];
  const factors = await resealedTotpSecrets(c, tag);
  const factorWrites = factors.map(({ userId, was, sealed }) => replaceTotpSecret(db, userId, was, sealed));
  if (writes.length + factorWrites.length === 0) return 0;
  const changed = new Set([...resealed.map(({ was }) => was.id), ...publicClients.map(({ id }) => id)]);
  await db.batch([auditEntryOf(changed.size + factors.length), ...writes, ...factorWrites]);
  for (const id of changed) forgetClient(id);
  return changed.size + factors.length;
}

/**
 * A page of authenticator secrets re-sealed under the current key, looking past those that open
 * under neither key (logged and left: the user sets the authenticator up again) by a cursor.
 */
async function resealedTotpSecrets(c: Context<AppEnv>, tag: string) {
  const ring = keyRing(c.env);
  const resealed: { userId: number; was: string; sealed: string }[] = [];
  let after = 0;
  for (let page = 0; page < MAX_PAGES && resealed.length === 0; page++) {
    const sealed = await totpSecretsUnderOtherKeys(c.get("db")(), tag, after, RESEAL_PAGE);
    for (const { userId, secretSealed } of sealed) {
      try {
        resealed.push({
          userId,
          was: secretSealed,
          sealed: await sealSecret(ring, await openSecret(ring, secretSealed)),
        });
      } catch {
        console.error(`keys: the authenticator secret of user ${userId} opens under neither key`);
      }
    }
    if (sealed.length < RESEAL_PAGE) break;
    after = sealed.at(-1)!.userId;
  }
  return resealed;
}
