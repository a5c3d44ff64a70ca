/** What the management writes answer (docs/management.md). */
import * as z from "zod/mini";
import { digitalContentSchema } from "./digital-content";
import { mailSchema } from "./mail";
import { userSchema } from "./user";

/** A sign-out's or a withdrawal's reach: the browser sessions ended and the grants revoked. */
export const signOutSchema = z.object({ userId: z.string(), sessions: z.number(), grants: z.number() });

export const auditEventSchema = z.object({
  id: z.string(),
  time: z.string(),
  merchantId: z.number(),
  clientId: z.string(),
  actor: z.enum(["client", "admin", "operator", "user", "service"]),
  action: z.string(),
  userId: z.nullable(z.string()),
  targetClientId: z.nullable(z.string()),
  ip: z.nullable(z.string()),
  detail: z.nullable(z.record(z.string(), z.unknown())),
});

const datetimeOrFalse = z.union([z.string(), z.literal(false)]);

/** Everything held about a user at the clients the caller manages (docs/management.md "Export"). */
export const userExportSchema = z.object({
  user: userSchema,
  connections: z.array(z.object({ clientId: z.string(), merchantId: z.number(), created: z.string() })),
  sessions: z.array(
    z.object({
      clientId: z.nullable(z.string()),
      created: z.string(),
      expires: z.string(),
      revoked: datetimeOrFalse,
      method: z.nullable(z.string()),
    }),
  ),
  grants: z.array(
    z.object({
      clientId: z.string(),
      scope: z.string(),
      created: z.string(),
      expires: z.string(),
      revoked: datetimeOrFalse,
    }),
  ),
  devices: z.array(
    z.object({
      clientId: z.string(),
      platform: z.string(),
      applicationName: z.string(),
      applicationVersion: z.nullable(z.string()),
      created: z.string(),
    }),
  ),
  digitalContents: z.array(digitalContentSchema),
  mails: z.array(mailSchema),
  audit: z.array(auditEventSchema),
});

/** A rotated client secret, answered once. */
export const clientSecretSchema = z.object({
  clientId: z.string(),
  clientSecret: z.string(),
  previousSecretValidUntil: z.string(),
});

export const clientStatusSchema = z.object({ clientId: z.string(), status: z.enum(["active", "disabled"]) });

/** A client's settings (POST /api/2/client, POST /api/2/client/{clientId}); the secrets only when just made. */
export const clientSettingsResponseSchema = z.object({
  clientId: z.string(),
  merchantId: z.number(),
  name: z.string(),
  alias: z.string(),
  domain: z.string(),
  status: z.enum(["active", "disabled"]),
  redirectUris: z.array(z.string()),
  defaultRedirectUri: z.nullable(z.string()),
  fields: z.record(z.string(), z.optional(z.union([z.boolean(), z.string()]))),
  grantTypes: z.array(z.string()),
  accessTokenLifetime: z.number(),
  autoApprove: z.boolean(),
  enableSso: z.boolean(),
  requireSecondFactor: z.boolean(),
  public: z.boolean(),
  ipAllowList: z.array(z.string()),
  rateLimit: z.nullable(z.object({ limit: z.number(), windowSeconds: z.number() })),
  apiEndpoints: z.nullable(z.array(z.string())),
  jwt: z.boolean(),
  resources: z.array(z.string()),
  callbackUrl: z.nullable(z.string()),
  backchannelLogoutUri: z.nullable(z.string()),
  backchannelLogoutSessionRequired: z.boolean(),
  refreshTokenRotation: z.boolean(),
  postLogoutRedirectUris: z.array(z.string()),
  logoUri: z.nullable(z.string()),
  clientUri: z.nullable(z.string()),
  scope: z.nullable(z.string()),
  idTokenSignedResponseAlg: z.nullable(z.string()),
  accessTokenSignedResponseAlg: z.nullable(z.string()),
  admin: z.boolean(),
  universalDataAccess: z.boolean(),
  unregisteredPayments: z.boolean(),
  created: z.string(),
  updated: z.string(),
  clientSecret: z.optional(z.string()),
  signingSecret: z.optional(z.string()),
});

/** A replay of a client's failed callbacks: how many changes wait again. */
export const callbackReplaySchema = z.object({ clientId: z.string(), replayed: z.number() });

/** A rotated signing secret, answered once. */
export const signingSecretSchema = z.object({
  clientId: z.string(),
  signingSecret: z.string(),
  previousSecretValidUntil: z.string(),
});

const liveUnderPrevious = z.object({ count: z.number(), until: z.nullable(z.string()) });

/** A round of a data-protection key rotation's re-sealing (docs/operations.md). */
export const keyRotationSchema = z.object({
  rotation: z.enum(["none", "under-way", "ended"]),
  started: z.nullable(z.string()),
  /** When re-sealing starts: the switch margin after the start, for isolates still on the previous key. */
  resealsFrom: z.nullable(z.string()),
  resealed: z.number(),
  previousKeyNeeded: z.boolean(),
  remaining: z.object({
    signingSecrets: z.number(),
    /** Authenticator secrets (second factors) not yet re-sealed: like signing secrets, they have no other copy. */
    totpSecrets: z.number(),
    clients: z.array(z.string()),
    sessions: liveUnderPrevious,
    refreshTokens: liveUnderPrevious,
    idempotencyKeys: liveUnderPrevious,
    signInLinks: z.object({ until: z.nullable(z.string()) }),
  }),
});
