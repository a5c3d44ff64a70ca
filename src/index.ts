import { app } from "./app";
import { checkConfiguration, configurationChecked } from "./configuration";
import type { Bindings } from "./env";
import { nowInSeconds } from "./http/datetime";
import { purgeExpired } from "./jobs/retention";
import { SIGN_OUT_CRON, signOutRefusedUsers } from "./jobs/status-sign-outs";
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
  // wrangler.toml [triggers]: every minute the sign-out job, hourly the retention job's purge.
  async scheduled(controller, handed) {
    const env = reliableBindings(handed);
    if (controller.cron === SIGN_OUT_CRON) {
      const done = await whenChecked(env, () => signOutRefusedUsers(env, nowInSeconds));
      if (done.signedOut + done.failed > 0) console.log(`sign-out job: ${JSON.stringify(done)}`);
      return;
    }
    const purged = await whenChecked(env, () => purgeExpired(env, nowInSeconds()));
    console.log(`retention: purged ${JSON.stringify(purged)}`);
  },
} satisfies ExportedHandler<Bindings>;
