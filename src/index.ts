import { app } from "./app";
import { checkConfiguration, configurationChecked } from "./configuration";
import type { Bindings } from "./env";
import { makeQueuedLinks } from "./queues/link-requests";

export { RateLimiter } from "./durable-objects/rate-limiter";

/**
 * Runs `handle` once `env`'s secrets have been checked (configuration.ts): before the first
 * request or batch an isolate serves with them; after that, two map look-ups.
 */
function whenChecked<T>(env: Bindings, handle: () => T | Promise<T>): T | Promise<T> {
  return configurationChecked(env) ? handle() : checkConfiguration(env).then(handle);
}

export default {
  fetch: (request: Request, env: Bindings, ctx: ExecutionContext) =>
    whenChecked(env, () => app.fetch(request, env, ctx)),
  // One queue so far: the login page's sign-in link requests.
  queue: (batch, env) => whenChecked(env, () => makeQueuedLinks(batch, env)),
} satisfies ExportedHandler<Bindings>;
