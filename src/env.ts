/**
 * The Worker's environment and the types every layer shares about a request. Nothing imported here
 * imports this module back (`npm run lint:imports` checks it): it is the low end of the graph.
 */
import type { D1Usage, Database } from "./db/client";
import type { RateLimiterRpc, RateLimitFigures } from "./durable-objects/rate-limiter-rpc";
import type { ResponseFormat } from "./http/format";
import type { CallbackDelivery } from "./schemas/callback-delivery";
import type { LinkRequestMessage } from "./schemas/link-request";
import type { LogoutNotice } from "./schemas/logout-notice";

/** Everything wrangler.toml and the secrets give the Worker. */
export type Bindings = {
  DB: D1Database;
  /** Exchange codes and sign-in tokens (key layout in docs/storage.md). */
  CODES: KVNamespace;
  RATE_LIMITER: DurableObjectNamespace<RateLimiterRpc>;
  /** The login page's sign-in link requests, made and mailed by the consumer (queues/link-requests.ts). */
  LINK_REQUESTS: Queue<LinkRequestMessage>;
  /** Back-channel logout notices, delivered to the clients by the consumer (queues/logout-notices.ts). */
  LOGOUT_NOTICES: Queue<LogoutNotice>;
  /** Callback deliveries, queued by each client's schedule and made by the consumer (queues/callbacks.ts). */
  CALLBACKS: Queue<CallbackDelivery>;
  /**
   * The sign-in Worker (wrangler.sign-in.toml), placed next to the D1 primary: bound in the edge
   * Worker of staging and production, which passes it the /oauth/* requests that need the primary
   * (middleware/sign-in-worker.ts). Unbound, as in the sign-in Worker itself and locally, this
   * Worker answers everything.
   */
  SIGN_IN?: Fetcher;
  /**
   * Where every client's Durable Object is made: a location hint (`weur`, `enam`, ...), the D1
   * primary's region (docs/edge.md). Unset, an object is made near its first caller.
   */
  DURABLE_OBJECT_REGION?: DurableObjectLocationHint;
  /** The callbacks' batching window in seconds (docs/callbacks.md); 300 when unset. */
  CALLBACK_BATCH_SECONDS?: string;
  ENVIRONMENT: string;
  BASE_URL: string;
  TOKEN_SIGNING_KEYS: string;
  DATA_PROTECTION_KEY: string;
  /** During a key rotation, the key before DATA_PROTECTION_KEY, for reading only (docs/operations.md). */
  DATA_PROTECTION_KEY_PREVIOUS?: string;
  /** The HTTP e-mail API (mail/mailer.ts); secrets, unset locally. */
  MAIL_API_URL?: string;
  MAIL_API_KEY?: string;
  /** The sender address of the service's mail. */
  MAIL_FROM?: string;
  /** The HTTP SMS API verification codes go through (sms/sender.ts); secrets, unset locally. */
  SMS_API_URL?: string;
  SMS_API_KEY?: string;
  /** The sender name or number of the service's text messages. */
  SMS_FROM?: string;
};

/** Per-request values set by middleware; handlers read them, never rebuild them. */
export type Variables = {
  /**
   * The request's database, opened on the first call: a request answered without D1 (status, the
   * isolate's caches) builds none.
   */
  db: () => Database;
  /** The caller sent `x-d1-bookmark`: reads at least that fresh, so never from an isolate's cache. */
  bookmarked: boolean;
  format: ResponseFormat;
  route: RouteInfo;
  caller: Caller;
  rateLimit: RateLimitFigures;
  /** Set when the request asks for a signed response; the key once the calling client is known. */
  signing?: { key: CryptoKey | null };
  /** Set outside production only (middleware/request.ts serverTiming). */
  timing?: RequestTiming;
};

/** Where one request's time went, in milliseconds. */
export type RequestTiming = { started: number; d1: D1Usage; durableObjectMs: number; durableObjectCalls: number };

export type AppEnv = { Bindings: Bindings; Variables: Variables };

/** The route's name and controller, as the container reports them (http/container.ts). */
export type RouteInfo = { name: string; controller: string };

export type TokenKind = "user" | "server";

/**
 * What a verified access token says about its bearer (oauth/tokens.ts). The token's `mid` claim is
 * for resource servers; this API scopes every call by the client's current merchant instead (see Caller).
 */
export type AccessTokenClaims = {
  kind: TokenKind;
  clientId: string;
  /** Set on user tokens only. */
  userId: number | null;
  scope: string;
  expires: number;
  issuedAt: number;
  jti: string;
  /** The grant (refresh-token family) the token was issued under; revoking it revokes the token. */
  grant: string | null;
  audience: string;
  /** The user's claims userinfo gives beyond the scope's: an authorization request's `claims`. */
  userinfoClaims: readonly string[];
};

/** The bearer of a verified token, with the merchant that scopes the call (middleware/auth.ts). */
export type Caller = AccessTokenClaims & {
  /** The client's current merchant as the rate limiter knows it (at most a minute old), never the token's. */
  merchantId: number;
};
