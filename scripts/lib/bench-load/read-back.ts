/**
 * What the service kept once the load is over: the device registrations in D1, and each client's
 * Durable Object (its window's count and leases, its password failures), read from the SQLite
 * files Miniflare persisted once the runtime is disposed.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Miniflare } from "miniflare";
import { LEASE_MS } from "../../../src/durable-objects/lease-lifetime";
import { readRateLimiterState, type RateLimiterState } from "../rate-limiter-state";
import type { LoadClient } from "./setup";
import type { RegisteredDevice } from "./tally";

/**
 * Every lease of the load has run out after LEASE_MS; the next call for each client hands back
 * the slots its isolate did not use (and takes a lease of its own, with one used slot). Counts
 * that call with the client's API calls; returns its status per client id.
 */
export async function settleLeases(url: string, clients: LoadClient[]): Promise<Map<string, number>> {
  await sleep(LEASE_MS + 1_000);
  const finalCalls = new Map<string, number>();
  for (const client of clients) {
    const res = await fetch(`${url}/api/2/clients`, { headers: { Authorization: `Bearer ${client.serverToken}` } });
    await res.arrayBuffer();
    finalCalls.set(client.id, res.status);
    client.sent += 1;
    if (res.ok) client.admitted += 1;
    else if (res.status === 420) client.refused += 1;
  }
  await sleep(1_000); // releases of further leases are sent after the response (waitUntil)
  return finalCalls;
}

/** The load clients' device registrations in D1, and their Durable Objects' ids by client id. */
export async function readService(
  runtime: Miniflare,
  clients: LoadClient[],
): Promise<{ storedDevices: RegisteredDevice[]; objectIds: Map<string, string> }> {
  const d1 = await runtime.getD1Database("DB", "service");
  const stored = await d1
    .prepare(
      "SELECT hash, user_id AS userId, client_id AS clientId FROM device_fingerprints WHERE client_id IN (?, ?, ?)",
    )
    .bind(...clients.map((client) => client.id))
    .all<RegisteredDevice>();
  const namespace = await runtime.getDurableObjectNamespace("RATE_LIMITER", "service");
  const objectIds = new Map(clients.map((client) => [client.id, namespace.idFromName(client.id).toString()]));
  return { storedDevices: stored.results, objectIds };
}

/** Each client's Durable Object state, by client id. The runtime must have been disposed. */
export async function readDurableObjects(
  statePath: string,
  objectIds: Map<string, string>,
): Promise<Map<string, RateLimiterState>> {
  const states = new Map<string, RateLimiterState>();
  for (const [clientId, idHex] of objectIds) states.set(clientId, await readRateLimiterState(statePath, idHex));
  return states;
}
