import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { seedDemoData } from "./helpers/seed";

// Migrations apply only once; the demo import is an upsert, so running it per file is harmless.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
await seedDemoData();
