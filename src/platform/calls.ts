/**
 * Every call the Worker makes to D1, KV, a Durable Object or a queue goes through platformCall
 * (bindings.ts wraps the bindings so): it answers within CALL_DEADLINE_MS, its retries included;
 * a transient fault of a call that is safe to repeat is retried at once (twice at most, with
 * jitter) while the deadline leaves room for it; what is left becomes one PlatformUnavailable (503
 * with Retry-After), logged here once with the binding and the kind of fault, never with what the
 * call carried. Any other error passes through untouched.
 */
import { PlatformUnavailable } from "../errors";
import { type BindingName, type FaultKind, faultKind } from "./faults";
import { recordFault } from "./health";

/**
 * No call, its retries included, waits longer than this for the platform: D1 and the others
 * answer in milliseconds when well. The holds that must outlast a request's calls are counted in it.
 */
export const CALL_DEADLINE_MS = 3_000;
/** Attempts of a call that is safe to repeat, the first one included. */
const MAX_ATTEMPTS = 3;
/** The first retry waits up to this long, the second up to twice as long (full jitter). */
const BACKOFF_MS = 50;
/** A retry is made only with at least this much of the deadline left: less could not be answered. */
const MIN_ATTEMPT_MS = 250;
/** What a client is told to wait: a transient fault passes at once; load and resets take longer. */
const RETRY_AFTER_SECONDS: Record<FaultKind, number> = { transient: 1, unrepeatable: 1, overloaded: 5, timeout: 5 };

class CallTimedOut extends Error {}

/**
 * Runs `work`, a call to `binding` (`operation` names it in the log). `repeatable`: the call may
 * be made twice with the same effect as once (a read, a KV put, an idempotent RPC method).
 */
export async function platformCall<T>(
  binding: BindingName,
  operation: string,
  repeatable: boolean,
  work: () => Promise<T>,
): Promise<T> {
  // performance.now(), not Date.now(): a test that sets the date must not move the deadline.
  const deadline = performance.now() + CALL_DEADLINE_MS;
  for (let attempt = 1; ; attempt++) {
    let kind: FaultKind | null;
    let error: unknown;
    try {
      return await beforeDeadline(work(), deadline);
    } catch (caught) {
      kind = caught instanceof CallTimedOut ? "timeout" : faultKind(binding, caught);
      if (kind === null) throw caught;
      error = caught;
    }
    const backoff = Math.random() * BACKOFF_MS * attempt;
    const roomLeft = deadline - performance.now() - backoff >= MIN_ATTEMPT_MS;
    if (kind !== "transient" || !repeatable || attempt === MAX_ATTEMPTS || !roomLeft) {
      throw unavailable(binding, operation, kind, attempt, error);
    }
    await new Promise((resolve) => setTimeout(resolve, backoff));
    // A timer may fire late: no attempt is started without the room it needs.
    if (deadline - performance.now() < MIN_ATTEMPT_MS) throw unavailable(binding, operation, kind, attempt, error);
  }
}

function beforeDeadline<T>(work: Promise<T>, deadline: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new CallTimedOut(`no answer within ${CALL_DEADLINE_MS} ms`)),
      Math.max(0, deadline - performance.now()),
    );
  });
  return Promise.race([work, timedOut]).finally(() => clearTimeout(timer));
}

/**
 * A call that failed for good: recorded for the status page, logged once in the platform's own
 * words, and answered as a 503 with the Retry-After its kind calls for.
 */
export function unavailable(
  binding: BindingName,
  operation: string,
  kind: FaultKind,
  attempts: number,
  error: unknown,
): PlatformUnavailable {
  recordFault(binding, Date.now());
  // The platform's own wording (its messages carry no data of the call); cut short all the same.
  const message = error instanceof Error ? error.message.slice(0, 200) : "";
  console.error(
    `platform fault: ${binding} ${operation} ${kind} after ${attempts} attempt${attempts === 1 ? "" : "s"}: ${message}`,
  );
  return new PlatformUnavailable(RETRY_AFTER_SECONDS[kind]);
}
