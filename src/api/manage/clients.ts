/**
 * Managing clients while the service runs (docs/management.md "Managing clients"): rotating a
 * client's secret and its signing secret with an overlap, disabling or enabling a client, and
 * replaying its failed callbacks. An
 * admin client manages itself and its merchant's clients without rights of their own; the
 * operator's client every client. Each write is one D1 batch with its
 * audit entry; this isolate forgets its cached copy at once, the others within their minute.
 */
import type { BatchItem } from "drizzle-orm/batch";
import { type Context, Hono } from "hono";
import type { Database } from "../../db/client";
import { violatesUnique } from "../../db/constraints";
import {
  type ClientRecord,
  findClientRecord,
  rotateClientSecret,
  rotateClientSigningSecret,
  setClientDisabled,
} from "../../db/queries/clients";
import { replayFailedChanges } from "../../db/queries/callbacks";
import type { AppEnv } from "../../env";
import { ApiError } from "../../errors";
import { auditEntry } from "../../events/audit";
import { wakeSchedules } from "../../events/callbacks";
import { describeRoute, respond } from "../../http/container";
import { formatDatetime, nowInSeconds, parseDatetime } from "../../http/datetime";
import {
  earlierResource,
  IDEMPOTENCY_KEY_PARAMETER,
  idempotencyOf,
  keyRecord,
  openKeptSecret,
} from "../../http/idempotency";
import { validate } from "../../http/validation";
import { requireToken } from "../../middleware/auth";
import { forgetClient } from "../../oauth/client-auth";
import {
  callbackReplaySchema,
  clientSecretSchema,
  clientStatusSchema,
  signingSecretSchema,
} from "../../schemas/responses/management";
import { clientSecretRequestSchema, clientStatusRequestSchema } from "../../schemas/management";
import { timingSafeEqual } from "../../security/constant-time";
import { keyRing, openSecret, protectSecret, sealSecret, verifySecret } from "../../security/data-protection";
import { randomToken } from "../../security/random-token";
import { callerAuthority, managedClient } from "./authority";
import type { Actor } from "../../events/audit";

/** Without `previousSecretValidUntil`, the old secret works a day more; at most thirty. */
const DEFAULT_OVERLAP_SECONDS = 24 * 3600;
const MAX_OVERLAP_SECONDS = 30 * 24 * 3600;

/** A caller's clock a little behind ours still means "now". */
const CLOCK_SKEW_SECONDS = 60;

/**
 * `previousSecretValidUntil`: Unix seconds or `YYYY-MM-DD HH:MM:SS`, from now to thirty days on;
 * a time up to a minute past is now.
 */
function overlapEnd(sent: string | undefined, now: number): number {
  if (sent === undefined) return now + DEFAULT_OVERLAP_SECONDS;
  const end = /^\d{1,12}$/.test(sent) ? Number(sent) : parseDatetime(sent);
  if (end === null || end < now - CLOCK_SKEW_SECONDS || end > now + MAX_OVERLAP_SECONDS) {
    throw new ApiError(
      400,
      "invalid_request",
      "Invalid parameter value: previousSecretValidUntil (Unix seconds or YYYY-MM-DD HH:MM:SS, from now to 30 days on)",
    );
  }
  return Math.max(end, now);
}

/**
 * Rotates one of the client's secrets with `write`, once per Idempotency-Key: a retry with the key
 * answers the secret the first request made (kept sealed beside the key for its day), where a
 * second rotation would end the very secret the client still uses.
 */
async function rotate(
  c: Context<AppEnv>,
  authority: Actor,
  client: ClientRecord,
  action: string,
  /** The form's `previousSecretValidUntil`. */
  sentUntil: string | undefined,
  /** How the secret is kept (hashed, or sealed), the statement that keeps it, and whether it still is the client's. */
  keep: {
    as: (secret: string) => Promise<string>;
    isCurrent: (secret: string) => Promise<boolean>;
    write: (db: Database, kept: string, until: number, now: number) => BatchItem<"sqlite">;
  },
): Promise<{ secret: string; previousValidUntil: number }> {
  const db = c.get("db")();
  const now = nowInSeconds();
  const idempotency = await idempotencyOf(c, authority.clientId);
  const earlier = async () => {
    const resource = await earlierResource(db, idempotency, now);
    if (resource === undefined) return undefined;
    const [until, sealed] = resource.split(" ") as [string, string];
    return { secret: await openKeptSecret(c.env, sealed), previousValidUntil: Number(until) };
  };
  const repeated = await earlier();
  if (repeated) {
    // A replay answers the secret it made only while that is still the client's.
    if (!(await keep.isCurrent(repeated.secret))) {
      throw new ApiError(409, "invalid_request", "The secret this Idempotency-Key made has been rotated since");
    }
    return repeated;
  }
  const previousValidUntil = overlapEnd(sentUntil, now);
  const secret = randomToken();
  const kept = `${previousValidUntil} ${await sealSecret(keyRing(c.env), secret)}`;
  try {
    await db.batch([
      keep.write(db, await keep.as(secret), previousValidUntil, now),
      auditEntry(
        c,
        authority,
        { action, targetClientId: client.id, detail: { previousSecretValidUntil: previousValidUntil } },
        now,
      ),
      ...keyRecord(db, idempotency, kept, now),
    ]);
  } catch (err) {
    // A racing request with the same key rotated first: answer what it made.
    const raced = violatesUnique(err, "idempotency_keys") ? await earlier() : undefined;
    if (raced) return raced;
    throw err;
  }
  forgetClient(client.id);
  return { secret, previousValidUntil };
}

const statusName = (client: Pick<ClientRecord, "disabled">) => (client.disabled === null ? "active" : "disabled");

export const clientManagementRoutes = new Hono<AppEnv>()
  .post(
    "/client/:clientId/secret",
    describeRoute({
      name: "Rotate a client's secret",
      controller: "api/manage/clients#rotate-secret",
      description:
        "A new client secret, answered once; the old one keeps working until `previousSecretValidUntil` (Unix seconds or `YYYY-MM-DD HH:MM:SS`, now to 30 days on; a day by default; now ends it at once). A secret from an earlier rotation still in its overlap ends now. An admin client for itself and its merchant's clients without rights of their own, the operator's client for any. A public client has no secret (400). With an `Idempotency-Key`, a retry answers the same secret (409 once it has been rotated again).",
      parameters: [IDEMPOTENCY_KEY_PARAMETER],
      success: { data: clientSecretSchema },
    }),
    requireToken("client/secret", "server"),
    validate("form", clientSecretRequestSchema),
    async (c) => {
      const authority = await callerAuthority(c);
      const client = await managedClient(c, authority);
      if (client.publicClient) throw new ApiError(400, "invalid_request", "A public client has no secret to rotate");
      const { secret, previousValidUntil } = await rotate(
        c,
        authority,
        client,
        "client.secret.rotate",
        c.req.valid("form").previousSecretValidUntil,
        {
          as: (secret) => protectSecret(keyRing(c.env), secret),
          isCurrent: async (secret) => {
            const stored = (await findClientRecord(c.get("db")(), client.id))!.secretHash;
            return (await verifySecret(keyRing(c.env), secret, stored)) !== null;
          },
          write: (db, hash, until, now) => rotateClientSecret(db, client.id, hash, until, now),
        },
      );
      return respond(c, {
        object: "ClientSecret",
        data: {
          clientId: client.id,
          clientSecret: secret,
          previousSecretValidUntil: formatDatetime(previousValidUntil),
        },
      });
    },
  )
  .post(
    "/client/:clientId/signing-secret",
    describeRoute({
      name: "Rotate a client's signing secret",
      controller: "api/manage/clients#rotate-signing-secret",
      description:
        "A new signing secret (signed responses, JWT assertions), answered once. Until `previousSecretValidUntil` (as for the client secret: now to 30 days on, a day by default) the old one still signs responses and assertions signed with either are taken, so the client can verify with both, then switch; after it only the new one does. Who may, and the `Idempotency-Key`, as for the client secret.",
      parameters: [IDEMPOTENCY_KEY_PARAMETER],
      success: { data: signingSecretSchema },
    }),
    requireToken("client/signing-secret", "server"),
    validate("form", clientSecretRequestSchema),
    async (c) => {
      const authority = await callerAuthority(c);
      const client = await managedClient(c, authority);
      const { secret, previousValidUntil } = await rotate(
        c,
        authority,
        client,
        "client.signing-secret.rotate",
        c.req.valid("form").previousSecretValidUntil,
        {
          as: (secret) => sealSecret(keyRing(c.env), secret),
          isCurrent: async (secret) => {
            const sealed = (await findClientRecord(c.get("db")(), client.id))?.signingSecretSealed;
            return sealed != null && timingSafeEqual(await openSecret(keyRing(c.env), sealed), secret);
          },
          write: (db, sealed, until, now) => rotateClientSigningSecret(db, client.id, sealed, until, now),
        },
      );
      return respond(c, {
        object: "ClientSigningSecret",
        data: {
          clientId: client.id,
          signingSecret: secret,
          previousSecretValidUntil: formatDatetime(previousValidUntil),
        },
      });
    },
  )
  .post(
    "/client/:clientId/status",
    describeRoute({
      name: "Disable or enable a client",
      controller: "api/manage/clients#status",
      description:
        "`status`: `disabled` or `active`. A disabled client is unknown everywhere: it gets no token, its tokens are refused by the API within 5 seconds, and its sign-in pages are not shown; enabling it restores all of that (tokens issued before are valid again until they expire). An admin client for its merchant's clients without rights of their own, the operator's client for any; no client disables itself.",
      success: { data: clientStatusSchema },
    }),
    requireToken("client/status", "server"),
    validate("form", clientStatusRequestSchema),
    async (c) => {
      const authority = await callerAuthority(c);
      const client = await managedClient(c, authority);
      const status = c.req.valid("form").status;
      if (client.id === authority.clientId) {
        throw new ApiError(400, "invalid_request", "A client cannot change its own status");
      }
      if (status !== statusName(client)) {
        const now = nowInSeconds();
        const db = c.get("db")();
        await db.batch([
          setClientDisabled(db, client.id, status === "disabled" ? now : null, now),
          auditEntry(
            c,
            authority,
            {
              action: "client.status",
              targetClientId: client.id,
              detail: { status: { from: statusName(client), to: status } },
            },
            now,
          ),
        ]);
        forgetClient(client.id);
      }
      return respond(c, { object: "ClientStatus", data: { clientId: client.id, status } });
    },
  )
  .post(
    "/client/:clientId/callbacks/replay",
    describeRoute({
      name: "Replay a client's failed callbacks",
      controller: "api/manage/clients#replayCallbacks",
      description:
        "The changes whose callback failed every retry (kept 30 days, `callback.failed` in the audit trail) wait again, and go with the client's next callback, a batching window from now. Answers how many. An admin client for itself and its merchant's clients without rights of their own, the operator's client for any.",
      success: { data: callbackReplaySchema },
    }),
    requireToken("client/callbacks", "server"),
    async (c) => {
      const authority = await callerAuthority(c);
      const client = await managedClient(c, authority);
      const now = nowInSeconds();
      const db = c.get("db")();
      const [replayed] = await db.batch([
        replayFailedChanges(db, client.id),
        auditEntry(c, authority, { action: "client.callbacks.replay", targetClientId: client.id }, now),
      ]);
      wakeSchedules(c, replayed.length > 0 ? [{ clientId: client.id }] : []);
      return respond(c, { object: "CallbackReplay", data: { clientId: client.id, replayed: replayed.length } });
    },
  );
