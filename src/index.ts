import { app } from "./app";
import type { Bindings } from "./env";

export { RateLimiter } from "./durable-objects/rate-limiter";

export default { fetch: app.fetch } satisfies ExportedHandler<Bindings>;
