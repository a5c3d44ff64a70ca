/**
 * The one error model. Code anywhere throws ApiError (API conditions) or OAuthError (OAuth and
 * token conditions); app.ts's onError turns it into the spec's error body, inside the response
 * container on /api/2 and bare on /oauth. Anything else thrown is a bug: it is logged and the
 * client gets a generic 500 that reveals nothing.
 */
import { DrizzleQueryError } from "drizzle-orm/errors";
import { HTTPException } from "hono/http-exception";

/**
 * The spec's OAuth error codes, RFC 8707's invalid_target, and RFC 6749's server_error and
 * temporarily_unavailable (§4.1.2.1, the OAuth code that goes with a 503).
 */
export type ErrorCode =
  | "redirect_uri_mismatch"
  | "unauthorized_client"
  | "access_denied"
  | "invalid_request"
  | "invalid_client_id"
  | "unsupported_response_type"
  | "invalid_scope"
  | "invalid_grant"
  | "invalid_token"
  | "expired_token"
  | "insufficient_scope"
  | "unsupported_grant_type"
  | "invalid_target"
  | "invalid_client_metadata"
  | "invalid_redirect_uri"
  | "server_error"
  | "temporarily_unavailable";

export type ErrorBody = {
  error: ErrorCode;
  error_code: number;
  type: string;
  error_description: string;
};

/**
 * The container's `error`: the spec's four fields, then SPiD's API exception (`code`, `type`,
 * `description`; spid-tech-docs `types/api-exception.edn`), so that clients written for either
 * read the status and the text (the PHP SDK reads `error.code` and `error.description`).
 */
export type ContainerErrorBody = ErrorBody & { code: number; description: string };

export class ApiError extends Error {
  readonly type: string = "ApiException";

  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    readonly description: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
  }

  get body(): ErrorBody {
    return { error: this.code, error_code: this.status, type: this.type, error_description: this.description };
  }

  get containerBody(): ContainerErrorBody {
    return { ...this.body, code: this.status, description: this.description };
  }
}

export class OAuthError extends ApiError {
  override readonly type = "OAuthException";
}

/**
 * The one 503: the request could not be answered now, and the same request can be later, after
 * `Retry-After` seconds (RFC 6749's temporarily_unavailable). Nothing it did cost the client
 * anything it holds. Rendered as every error is: the container, the OAuth body, a localized page.
 */
export class TryAgainLater extends ApiError {
  constructor(description: string, retryAfterSeconds: number) {
    super(503, "temporarily_unavailable", description, { "Retry-After": String(retryAfterSeconds) });
  }
}

/** How long a client should wait before retrying while the service is misconfigured: a fix needs an operator. */
const MISCONFIGURED_RETRY_AFTER_SECONDS = 300;

/**
 * A secret the Worker needs is missing, malformed, or not the one the database was imported under
 * (src/configuration.ts): every use of it answers 503 until an operator fixes it. `problem` names
 * the secret and what is wrong, never its value.
 */
export class ConfigurationError extends TryAgainLater {
  constructor(readonly problem: string) {
    super(`The service is misconfigured: ${problem}`, MISCONFIGURED_RETRY_AFTER_SECONDS);
  }
}

/**
 * A call to D1, KV, a Durable Object or a queue failed on the platform's side and could not be
 * retried (platform/calls.ts). Nothing the request did may have cost the client anything it holds
 * (docs/reliability.md).
 */
export class PlatformUnavailable extends TryAgainLater {
  constructor(retryAfterSeconds: number) {
    super("The service is briefly unavailable; try again shortly", retryAfterSeconds);
  }
}

/**
 * The platform fault `err` is, or wraps: drizzle wraps what a D1 binding threw in a
 * DrizzleQueryError (whose message holds the query and its parameters: never log it).
 */
export function platformFaultOf(err: unknown): PlatformUnavailable | undefined {
  if (err instanceof PlatformUnavailable) return err;
  const cause = (err as { cause?: unknown } | null)?.cause;
  return cause instanceof PlatformUnavailable ? cause : undefined;
}

/**
 * What may be logged of an error: its stack, or for one that wraps another (drizzle's
 * DrizzleQueryError, whose message holds the query's parameters: e-mail addresses, hashes) its
 * name and its cause's stack. Never a message a query's values could be in.
 */
export function loggable(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? (err.cause.stack ?? err.cause.message) : "nothing said";
  if (err instanceof DrizzleQueryError) return `DrizzleQueryError, caused by ${cause}`;
  if (err.cause instanceof Error) return `${err.name}, caused by ${cause}`;
  return err.stack ?? err.message;
}

/**
 * Logs an error that is not the platform's (`what` says what failed): a platform fault was
 * logged once where it happened (platform/calls.ts), and is not logged again.
 */
export function logUnlessPlatformFault(what: string, err: unknown): void {
  if (!platformFaultOf(err)) console.error(`${what}:`, loggable(err));
}

/** The two OAuth failures the grants raise most (RFC 6749 §5.2). */
export const invalidGrant = (description: string) => new OAuthError(400, "invalid_grant", description);
export const invalidRequest = (description: string) => new OAuthError(400, "invalid_request", description);

/** Maps whatever was thrown to an ApiError; unexpected errors are logged here and only here. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const fault = platformFaultOf(err);
  if (fault) return fault;
  if (err instanceof HTTPException && err.status < 500) {
    return new ApiError(err.status, "invalid_request", "Malformed request");
  }
  console.error("unhandled error", loggable(err));
  return new ApiError(500, "server_error", "Internal server error");
}
