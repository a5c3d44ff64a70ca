import type { D1Usage, Database } from "./db/client";
import type { RateLimiter, RateLimitFigures } from "./durable-objects/rate-limiter";
import type { RouteInfo } from "./http/container";
import type { ResponseFormat } from "./http/format";
import type { Caller } from "./middleware/auth";
import type { LinkRequestMessage } from "./schemas/link-request";

/** Everything wrangler.toml and the secrets give the Worker. */
export type Bindings = {
  DB: D1Database;
  /** Exchange codes and sign-in tokens (key layout in docs/storage.md). */
  CODES: KVNamespace;
  RATE_LIMITER: DurableObjectNamespace<RateLimiter>;
  /** The login page's sign-in link requests, made and mailed by the consumer (queues/link-requests.ts). */
  LINK_REQUESTS: Queue<LinkRequestMessage>;
  ENVIRONMENT: string;
  BASE_URL: string;
  TOKEN_SIGNING_KEYS: string;
  DATA_PROTECTION_KEY: string;
  /** The HTTP e-mail API (mail/mailer.ts); secrets, unset locally. */
  MAIL_API_URL?: string;
  MAIL_API_KEY?: string;
  /** The sender address of the service's mail. */
  MAIL_FROM?: string;
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
