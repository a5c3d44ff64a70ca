/**
 * When a client is next told of its waiting changes (docs/callbacks.md). The changes themselves
 * wait in D1 (db/schema/callbacks.ts); this keeps the one schedule per client that batches them:
 * the first change wakes it, and a delivery of everything waiting is queued a batching window
 * later (CALLBACK_BATCH_SECONDS, 300 by default), so the client gets at most one request per
 * window. A delivery is assumed to fail until the consumer says otherwise: queuing it arms the
 * retry (5 min, 15 min, 1 h, 12 h, 12 h later), so a consumer that never answers is retried like
 * a receiver that refused. The state lives in the object's KV under `callbacks`, the wake-up in
 * its one alarm (rate-limiter.ts).
 */
import type { Bindings } from "../env";
import { loggable } from "../errors";

/** How long each retry waits after the try before it: SPiD's 5 min, 15 min, 1 h, 12 h and 12 h. */
export const CALLBACK_RETRY_DELAYS_SECONDS = [300, 900, 3_600, 43_200, 43_200] as const;
const DEFAULT_BATCH_SECONDS = 300;
/** A delivery the queue did not take is queued again this much later. */
const SEND_RETRY_MS = 60_000;
const STATE_KEY = "callbacks";

type State = {
  clientId: string;
  /** When the next delivery is queued (ms); null when nothing waits. */
  due: number | null;
  /** The try the next delivery is: 0 for a first one. */
  attempt: number;
  /** A change came while a delivery was under way: another follows it. */
  changedSince: boolean;
};

/** The batching window (ms): CALLBACK_BATCH_SECONDS, a whole number of seconds from 1. */
export function batchWindowMs(env: Bindings): number {
  const seconds = Number(env.CALLBACK_BATCH_SECONDS ?? DEFAULT_BATCH_SECONDS);
  return (Number.isInteger(seconds) && seconds >= 1 ? seconds : DEFAULT_BATCH_SECONDS) * 1000;
}

export class CallbackSchedule {
  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly env: Bindings,
  ) {}

  private state(): State | undefined {
    return this.storage.kv.get<State>(STATE_KEY);
  }

  /** A change for `clientId` waits: a delivery within a window, unless one is already due or under way. */
  async changed(clientId: string, now: number): Promise<void> {
    const state = this.state() ?? { clientId, due: null, attempt: 0, changedSince: false };
    if (state.due === null) state.due = now + batchWindowMs(this.env);
    else if (state.attempt > 0) state.changedSince = true;
    this.storage.kv.put(STATE_KEY, { ...state, clientId });
    const alarm = await this.storage.getAlarm();
    if (alarm === null || state.due < alarm) await this.storage.setAlarm(state.due);
  }

  /**
   * The delivery queued as try `attempt` has settled (delivered, or failed for good); `more`: changes
   * still wait. A settlement of any other try than the last queued is stale and changes nothing.
   */
  async settled(attempt: number, more: boolean, now: number): Promise<void> {
    const state = this.state();
    if (!state || state.attempt !== attempt + 1) return;
    const due = more || state.changedSince ? now + batchWindowMs(this.env) : null;
    this.storage.kv.put(STATE_KEY, { ...state, due, attempt: 0, changedSince: false });
    const alarm = await this.storage.getAlarm();
    if (due !== null && (alarm === null || due < alarm)) await this.storage.setAlarm(due);
  }

  /**
   * The alarm: queues the delivery that is due, its retry armed first (so a settlement that comes
   * while the message is being sent finds the try it settles). A send that fails is tried again a
   * minute later, keeping the try it was. Answers when the schedule next needs the alarm (null: it
   * does not).
   */
  async wake(now: number): Promise<number | null> {
    const state = this.state();
    if (!state || state.due === null) return null;
    if (state.due > now) return state.due;
    const retries = CALLBACK_RETRY_DELAYS_SECONDS;
    const due = now + retries[Math.min(state.attempt, retries.length - 1)]! * 1000;
    this.storage.kv.put(STATE_KEY, { ...state, due, attempt: state.attempt + 1, changedSince: false });
    try {
      await this.env.CALLBACKS.send({ clientId: state.clientId, attempt: state.attempt });
      return due;
    } catch (error) {
      console.warn(`callbacks of client ${state.clientId} not queued, trying again in a minute: ${loggable(error)}`);
      const again = now + SEND_RETRY_MS;
      // As it is now (a change may have come meanwhile), back to the try that was not queued.
      const current = this.state();
      if (current?.attempt === state.attempt + 1)
        this.storage.kv.put(STATE_KEY, { ...current, due: again, attempt: state.attempt });
      return again;
    }
  }
}
