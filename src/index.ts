import { app } from "./app";
import { checkConfiguration, configurationChecked } from "./configuration";
import type { Bindings } from "./env";
import { nowInSeconds } from "./http/datetime";
import { purgeExpired } from "./jobs/retention";
import { reliableBindings } from "./platform/bindings";
import { CALLBACKS_QUEUE, deliverCallbacks } from "./queues/callbacks";
import { makeQueuedLinks } from "./queues/link-requests";
import { deliverLogoutNotices, LOGOUT_NOTICES_QUEUE } from "./queues/logout-notices";

export { RateLimiter } from "./durable-objects/rate-limiter";

/**
 * Runs `handle` once `env`'s secrets have been checked (configuration.ts): before the first
 * request or batch an isolate serves with them; after that, two map look-ups.
 */
function whenChecked<T>(env: Bindings, handle: () => T | Promise<T>): T | Promise<T> {
  return configurationChecked(env) ? handle() : checkConfiguration(env).then(handle);
}

/**
 * Everything runs on the bindings it is handed, wrapped so that each storage call has a deadline,
 * retries what is safe to repeat and fails as a 503 (platform/bindings.ts).
 */
export default {
  fetch(request: Request, handed: Bindings, ctx: ExecutionContext) {
    const env = reliableBindings(handed);
    return whenChecked(env, () => app.fetch(request, env, ctx));
  },
  // Three queues: the login page's sign-in link requests, back-channel logout notices, callbacks.
  queue(batch, handed) {
    const env = reliableBindings(handed);
    const consume = batch.queue.startsWith(LOGOUT_NOTICES_QUEUE)
      ? deliverLogoutNotices
      : batch.queue.startsWith(CALLBACKS_QUEUE)
        ? deliverCallbacks
        : makeQueuedLinks;
    return whenChecked(env, () => consume(batch, env));
  },
  // The retention job (wrangler.toml [triggers]): an hourly purge of what has expired.
  async scheduled(_controller, handed) {
    const env = reliableBindings(handed);
    const purged = await whenChecked(env, () => purgeExpired(env, nowInSeconds()));
    console.log(`retention: purged ${JSON.stringify(purged)}`);
  },
} satisfies ExportedHandler<Bindings>;
