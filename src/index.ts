import { app } from "./app";
import { checkConfiguration, configurationChecked } from "./configuration";
import type { Bindings } from "./env";
import { reliableBindings } from "./platform/bindings";
import { makeQueuedLinks } from "./queues/link-requests";

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
  // One queue so far: the login page's sign-in link requests.
  queue(batch, handed) {
    const env = reliableBindings(handed);
    return whenChecked(env, () => makeQueuedLinks(batch, env));
  },
} satisfies ExportedHandler<Bindings>;
