/**
 * Which of the platform's errors are faults of the platform (transient: the same call may work a
 * moment later) rather than of the call (a bad statement, a bug), as Cloudflare documents them for
 * D1, Durable Objects, KV and Queues (docs/reliability.md "Failure modes"). Only a fault becomes a
 * 503; anything else stays what it is, and a bug still answers a generic 500.
 */

/** The bindings the Worker calls, as the logs and docs/reliability.md name them. */
export type BindingName = "D1" | "KV" | "Durable Object" | "Queue";

/**
 * - `transient`: the platform failed this call (connection lost, an object reset); repeating a
 *   call that is safe to repeat may work at once.
 * - `overloaded`: the platform is shedding load; repeating now adds to it.
 * - `timeout`: no answer within the call's deadline (calls.ts); the object behind it is likely
 *   resetting, which takes longer than a request can wait.
 */
export type FaultKind = "transient" | "overloaded" | "timeout";

/**
 * What D1 and Durable Objects say when they fail (D1 also inside the RateLimiter, whose errors
 * reach the Worker with their message): the connection, a reset object, a platform error.
 */
const TRANSIENT_MESSAGES =
  /network connection lost|object to be reset|reset because its code was updated|exceeded its memory limit|internal error|transient issue|storage operation exceeded timeout|durable object reset/i;
const OVERLOADED_MESSAGES = /overloaded|too many requests queued/i;
/** Errors thrown on the caller's side for a malformed call: bugs, never faults. */
const CALLER_ERRORS = [TypeError, RangeError, SyntaxError];

/**
 * The kind of fault `error` is for a call to `binding`, or null when it is no fault of the
 * platform. The Durable Object runtime flags its own (`retryable`, `overloaded`); KV and Queues
 * fail only on the platform's side once a call is well formed, so any error but a caller's is one.
 */
export function faultKind(binding: BindingName, error: unknown): FaultKind | null {
  if (!(error instanceof Error)) return null;
  const flags = error as { retryable?: unknown; overloaded?: unknown };
  if (flags.overloaded === true || OVERLOADED_MESSAGES.test(error.message)) return "overloaded";
  if (flags.retryable === true || TRANSIENT_MESSAGES.test(error.message)) return "transient";
  if ((binding === "KV" || binding === "Queue") && !CALLER_ERRORS.some((type) => error instanceof type)) {
    return "transient";
  }
  return null;
}
