/**
 * The two Workers each environment deploys (docs/edge.md "The sign-in Worker"), read as wrangler
 * reads them: the sign-in Worker (wrangler.sign-in.toml) must run on exactly the edge Worker's
 * storage, settings and objects, and the edge Worker must bind it by name; a drift between the two
 * files would split one service's data or send its sign-ins nowhere.
 */
import { describe, expect, it } from "vitest";
import { unstable_readConfig } from "wrangler";

/** Cloudflare's Durable Object location hints. */
const LOCATION_HINTS = ["wnam", "enam", "sam", "weur", "eeur", "apac", "oc", "afr", "me"];

describe.each(["staging", "production"])("wrangler's %s environment", (env) => {
  const edge = unstable_readConfig({ config: "wrangler.toml", env });
  const signIn = unstable_readConfig({ config: "wrangler.sign-in.toml", env });

  it("binds the sign-in Worker in the edge Worker, by its name", () => {
    expect(edge.services).toEqual([{ binding: "SIGN_IN", service: signIn.name }]);
    expect(signIn.services ?? []).toEqual([]);
  });

  it("gives the sign-in Worker the edge Worker's D1, KV, queues, variables and code", () => {
    expect(signIn.main).toBe(edge.main);
    expect(signIn.compatibility_date).toBe(edge.compatibility_date);
    expect(signIn.compatibility_flags).toEqual(edge.compatibility_flags);
    expect(signIn.d1_databases).toEqual(edge.d1_databases);
    expect(signIn.kv_namespaces).toEqual(edge.kv_namespaces);
    expect(signIn.queues.producers).toEqual(edge.queues.producers);
    expect(signIn.vars).toEqual(edge.vars);
  });

  it("lets the sign-in Worker reach the edge Worker's objects, made in a region Durable Objects take", () => {
    expect(signIn.durable_objects.bindings).toEqual(
      edge.durable_objects.bindings.map((binding: object) => ({ ...binding, script_name: edge.name })),
    );
    expect(LOCATION_HINTS).toContain(edge.vars.DURABLE_OBJECT_REGION);
  });

  it("places the sign-in Worker and gives it no way in but the edge Worker, and no queue or cron to run", () => {
    expect(signIn.placement).toEqual({ mode: "smart" });
    expect(edge.placement).toBeUndefined();
    expect(signIn.routes ?? []).toEqual([]);
    expect(signIn.workers_dev).toBe(false);
    expect(signIn.queues.consumers ?? []).toEqual([]);
    expect(signIn.triggers.crons ?? []).toEqual([]);
  });
});
