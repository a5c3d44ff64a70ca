/**
 * What this isolate has seen of the platform lately: when each binding last failed a call for good
 * (calls.ts). GET /api/2/status reports `platform: "degraded"` while any has within
 * RECENT_FAULT_MS, so that a monitor sees reduced operation before the users do.
 */
import type { BindingName } from "./faults";

/** How long one failed call keeps the isolate's status off `up`. */
const RECENT_FAULT_MS = 60_000;

const lastFault = new Map<BindingName, number>();

export function recordFault(binding: BindingName, now: number): void {
  lastFault.set(binding, now);
}

/** The bindings that failed a call within RECENT_FAULT_MS of `now`, in a fixed order. */
export function recentFaults(now: number): BindingName[] {
  const recent: BindingName[] = [];
  for (const [binding, at] of lastFault) {
    if (now - at < RECENT_FAULT_MS) recent.push(binding);
    else lastFault.delete(binding);
  }
  return recent.sort();
}
