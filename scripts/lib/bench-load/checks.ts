/**
 * What must hold under any load:
 *   1. no 5xx, every request answered, and every answer one its request can get;
 *   2. every device registration that got 201 reads back from D1, for its user and client, and
 *      no other was stored;
 *   3. each client's admitted calls (2xx) equal what its Durable Object counted, and never exceed
 *      its quota;
 *   4. the password throttle counted every wrong password, per account, and kept no count for a
 *      right one.
 */
import { fmt } from "../bench-runtime";
import type { RateLimiterState } from "../rate-limiter-state";
import type { LoadOutcome } from "./load";
import type { LoadClient } from "./setup";
import type { RegisteredDevice, Sent } from "./tally";

export type Check = { name: string; ok: boolean; detail: string };

/** A client's admitted calls as its Durable Object counted them, once the final call settled its leases. */
export type ClientCount = {
  client: LoadClient;
  counted: number;
  count: number;
  leases: number[];
  leasesKnown: boolean;
};

/** 1. No 5xx; every request answered; every answer one its request can get. */
export function answerChecks({ tally, result, started, lost }: LoadOutcome): Check[] {
  const statuses = new Map<number, number>();
  for (const s of tally.stats.values())
    for (const [status, count] of s.statuses) statuses.set(status, (statuses.get(status) ?? 0) + count);
  const fiveXx = [...statuses].filter(([status]) => status >= 500).reduce((sum, [, count]) => sum + count, 0);
  const unanswered = [...tally.pending].map((context) => {
    const { item, started: sentAt } = context as Sent;
    return `${item.method} ${item.path} (${item.client?.name}) sent at ${((sentAt - started) / 1000).toFixed(2)} s`;
  });
  const unexpected = [...tally.stats].filter(([, s]) => s.unexpected.length > 0);
  return [
    { name: "no 5xx", ok: fiveXx === 0, detail: `${fmt(fiveXx)} 5xx of ${fmt(tally.answered)}` },
    {
      name: "every request answered",
      ok: lost === 0 && tally.answered === tally.sent && result.errors === 0,
      detail:
        `${fmt(tally.answered)} of ${fmt(tally.sent)} answered, ${fmt(result.errors)} connection errors or timeouts` +
        (unanswered.length > 0 ? `; never answered: ${unanswered.join("; ")}` : ""),
    },
    {
      name: "every answer expected",
      ok: unexpected.length === 0,
      detail:
        unexpected.length === 0
          ? "tokens 200, API calls 2xx or 420, right passwords 200, wrong ones 400 invalid_grant"
          : unexpected
              .map(([kind, s]) => `${kind}: ${s.unexpected.length} (${s.unexpected.filter(Boolean).join(" | ")})`)
              .join("; "),
    },
  ];
}

/** 2. Every device registration that got 201 reads back, for its user and client. */
export function deviceCheck(devices: RegisteredDevice[], stored: RegisteredDevice[]): Check {
  const rows = new Set(stored.map((row) => `${row.hash} ${row.userId} ${row.clientId}`));
  const missing = devices.filter((device) => !rows.has(`${device.hash} ${device.userId} ${device.clientId}`));
  return {
    name: "device registrations read back",
    ok: missing.length === 0 && devices.length > 0 && stored.length === devices.length,
    detail: `${fmt(devices.length - missing.length)} of ${fmt(devices.length)} registrations (201) found in D1 for their user and client; ${fmt(stored.length)} rows stored`,
  };
}

/** Each client's count, given its Durable Object's state and the status of its final call (settleLeases). */
export function countsByDurableObject(
  clients: LoadClient[],
  states: Map<string, RateLimiterState>,
  finalCalls: Map<string, number>,
): ClientCount[] {
  return clients.map((client) => {
    const window = states.get(client.id)!.window;
    const leases = Object.values(window?.leases ?? {});
    // Each lease still held was taken by the final call, which used one of its slots.
    const finalStatus = finalCalls.get(client.id) ?? 0;
    const finalAdmitted = finalStatus >= 200 && finalStatus < 300;
    return {
      client,
      counted: window ? window.count - leases.reduce((sum, slots) => sum + slots - 1, 0) : 0,
      count: window?.count ?? 0,
      leases,
      leasesKnown: leases.length === 0 || (leases.length === 1 && finalAdmitted),
    };
  });
}

/** 3. Admitted calls per client: as the Durable Object counted them, never over the quota. */
export function quotaChecks(counts: ClientCount[]): Check[] {
  const checks = counts.map(({ client, counted, count, leases, leasesKnown }) => ({
    name: `admitted = Durable Object's count <= quota (${client.name})`,
    ok: leasesKnown && client.admitted === counted && client.admitted <= client.quota && count <= client.quota,
    detail: `${fmt(client.admitted)} admitted, ${fmt(counted)} counted, quota ${fmt(client.quota)}${leasesKnown ? "" : `; leases held whose use is unknown: ${leases.join(", ")}`}`,
  }));
  // The bound is only tested where the load reached it.
  const exhausted = counts.map(({ client }) => client).filter((client) => client.refused > 0);
  checks.push({
    name: "a quota was reached",
    ok: exhausted.length > 0,
    detail: `${exhausted.map((client) => client.name).join(", ") || "none"} refused calls (420)`,
  });
  return checks;
}

/** 4. The throttle counted every wrong password, per account, and no right one. */
export function throttleChecks(
  clients: LoadClient[],
  wrongSent: Map<string, number>,
  states: Map<string, RateLimiterState>,
): Check[] {
  const countedFor = (key: string) => {
    const [clientId, account] = key.split(" ") as [string, string];
    return states.get(clientId)!.passwordFailures.get(account)?.count;
  };
  const wrongAccounts = [...wrongSent];
  const miscounted = wrongAccounts.filter(([key, count]) => countedFor(key) !== count);
  const strayCounts = clients.flatMap((client) =>
    [...states.get(client.id)!.passwordFailures.keys()]
      .filter((account) => !wrongSent.has(`${client.id} ${account}`))
      .map((account) => `${client.name}: ${account}`),
  );
  const wrongTotal = wrongAccounts.reduce((sum, [, count]) => sum + count, 0);
  return [
    {
      name: "throttle counted every wrong password",
      ok: miscounted.length === 0 && wrongTotal > 0,
      detail:
        `${fmt(wrongTotal)} wrong passwords to ${fmt(wrongAccounts.length)} accounts, ` +
        `${fmt(wrongAccounts.length - miscounted.length)} counted exactly` +
        (miscounted.length > 0
          ? ` (differ: ${miscounted
              .slice(0, 5)
              .map(([key, count]) => `${key} sent ${count}, counted ${countedFor(key) ?? 0}`)
              .join("; ")})`
          : ""),
    },
    {
      name: "no count left for a right password",
      ok: strayCounts.length === 0,
      detail: strayCounts.length === 0 ? "no other account has a count" : strayCounts.slice(0, 5).join("; "),
    },
  ];
}
