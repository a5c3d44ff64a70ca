import { app } from "./app";
import type { Bindings } from "./env";
import { makeQueuedLinks } from "./queues/link-requests";

export { RateLimiter } from "./durable-objects/rate-limiter";

export default {
  fetch: app.fetch,
  // One queue so far: the login page's sign-in link requests.
  queue: (batch, env) => makeQueuedLinks(batch, env),
} satisfies ExportedHandler<Bindings>;
