/**
 * Which of the platform's errors are faults of the platform (transient: the same call may work a
 * moment later) rather than of the call (a bad statement, a bug), as Cloudflare documents them for
 * D1, Durable Objects, KV and Queues (docs/reliability.md "Failure modes"). Only a fault becomes a
 * 503; anything else stays what it is, and a bug still answers a generic 500.
 */

/**
 * The bindings the Worker calls, as the logs and docs/reliability.md name them: the sign-in Worker
 * is the edge Worker's service binding (middleware/sign-in-worker.ts).
 */
export type BindingName = "D1" | "KV" | "Durable Object" | "Queue" | "Sign-in Worker";

/**
 * - `transient`: the platform failed this call (connection lost, an object reset); repeating a
 *   call that is safe to repeat may work at once.
 * - `unrepeatable`: the platform failed this call and says not to repeat it (`retryable: false`).
 * - `overloaded`: the platform is shedding load; repeating now adds to it.
 * - `timeout`: no answer within the call's deadline (calls.ts); the object behind it is likely
 *   resetting, which takes longer than a request can wait.
 */
export type FaultKind = "transient" | "unrepeatable" | "overloaded" | "timeout";

/**
 * What D1 says when it fails (also inside the RateLimiter, whose D1 errors reach the Worker with
 * their message and no flags): the connection, a reset object, an internal error.
 */
const TRANSIENT_MESSAGES =
  /network connection lost|object to be reset|reset because its code was updated|exceeded its memory limit|internal error|transient issue|storage operation exceeded timeout|durable object reset/i;
const OVERLOADED_MESSAGES = /overloaded|too many requests/i;
/**
 * An object of the earlier version, during a deploy, asked for a method this version added: the
 * sign-in Worker is deployed before the edge Worker, whose code the objects run.
 */
const METHOD_NOT_YET_DEPLOYED = /^The RPC receiver does not implement/;
/** The HTTP status a KV error names (`KV PUT failed: 413 Payload Too Large`). */
const HTTP_STATUS = /\b([45]\d\d)\b/;
/** A queue names only the status text (`Queue send failed: Too Many Requests`): a malformed send's. */
const CLIENT_ERROR_TEXT =
  /bad request|payload too large|entity too large|unauthorized|forbidden|not found|unprocessable/i;
/** Errors thrown on the caller's side for a malformed call: bugs, never faults. */
const CALLER_ERRORS = [TypeError, RangeError, SyntaxError];

/**
 * The kind of fault `error` is for a call to `binding`, or null when it is no fault of the
 * platform. The Durable Object runtime flags its own errors (`retryable`, `overloaded`) and its
 * flags are trusted (`retryable: false` is never repeated); one the object's code threw
 * (`remote`) is judged by its message (a D1 fault inside it), any other of the runtime's is a
 * fault. KV names the HTTP status it met, a queue its text: a 5xx is transient, a 429 ("Too Many
 * Requests") is load, any other 4xx a malformed call (a bug); without either, any error of theirs
 * but a caller's is a fault.
 */
export function faultKind(binding: BindingName, error: unknown): FaultKind | null {
  if (!(error instanceof Error)) return null;
  const { retryable, overloaded, remote } = error as { retryable?: unknown; overloaded?: unknown; remote?: unknown };
  if (overloaded === true) return "overloaded";
  if (retryable === true) return "transient";
  if (binding === "KV" || binding === "Queue") return storageServiceFault(error);
  if (OVERLOADED_MESSAGES.test(error.message)) return "overloaded";
  if (binding === "Durable Object" && METHOD_NOT_YET_DEPLOYED.test(error.message)) return "unrepeatable";
  // The runtime's own error on the way to or from an object (not `remote`: not thrown by its code).
  if (binding === "Durable Object" && remote !== true && !isCallerError(error)) {
    return retryable === false ? "unrepeatable" : "transient";
  }
  if (!TRANSIENT_MESSAGES.test(error.message)) return null;
  return retryable === false ? "unrepeatable" : "transient";
}

function isCallerError(error: Error): boolean {
  return CALLER_ERRORS.some((type) => error instanceof type);
}

function storageServiceFault(error: Error): FaultKind | null {
  if (isCallerError(error)) return null;
  const status = HTTP_STATUS.exec(error.message)?.[1];
  if (status === undefined) {
    if (OVERLOADED_MESSAGES.test(error.message)) return "overloaded";
    return CLIENT_ERROR_TEXT.test(error.message) ? null : "transient";
  }
  if (status === "429") return "overloaded";
  return status.startsWith("5") ? "transient" : null;
}
