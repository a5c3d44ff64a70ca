/**
 * What the load sent and what came back: per kind its statuses, latencies and unexpected answers;
 * per client its API calls admitted and refused; the devices registered and the wrong passwords
 * sent per account; and the requests not answered yet.
 */
import { API_KINDS, type Item, type Kind, KINDS } from "./mix";

export type KindStats = { sent: number; statuses: Map<number, number>; latencies: number[]; unexpected: string[] };
export type RegisteredDevice = { hash: string; userId: number; clientId: string };
/** What autocannon keeps per request for the tally: the item sent and when. */
export type Sent = { item: Item; started: number };

export class LoadTally {
  readonly stats = new Map<Kind, KindStats>(
    KINDS.map((kind) => [kind, { sent: 0, statuses: new Map(), latencies: [], unexpected: [] }]),
  );
  readonly devices: RegisteredDevice[] = [];
  /** Wrong passwords sent, by `<client id> <account>`. */
  readonly wrongSent = new Map<string, number>();
  /** The contexts of the load's requests sent and not yet answered. */
  readonly pending = new Set<object>();
  inFlight = 0;
  lastAnswer = 0;

  /** Requests of the load sent. */
  get sent(): number {
    return [...this.stats.values()].reduce((sum, s) => sum + s.sent, 0);
  }

  /** Requests of the load answered. */
  get answered(): number {
    return [...this.stats.values()].reduce((sum, s) => sum + s.latencies.length, 0);
  }

  recordSent(context: object): void {
    const { item } = context as Sent;
    if (item.kind === "drain") return;
    this.inFlight += 1;
    this.pending.add(context);
    this.stats.get(item.kind)!.sent += 1;
    if (item.client && API_KINDS.has(item.kind)) item.client.sent += 1;
    if (item.account) {
      const key = `${item.client!.id} ${item.account}`;
      this.wrongSent.set(key, (this.wrongSent.get(key) ?? 0) + 1);
    }
  }

  recordAnswer(status: number, body: string, context: object): void {
    const { item, started } = context as Sent;
    if (item.kind === "drain") return;
    const now = performance.now();
    this.inFlight -= 1;
    this.pending.delete(context);
    this.lastAnswer = now;
    const kindStats = this.stats.get(item.kind)!;
    kindStats.statuses.set(status, (kindStats.statuses.get(status) ?? 0) + 1);
    kindStats.latencies.push(now - started);
    if (!this.countOutcome(item, status, body)) {
      if (kindStats.unexpected.length < 5) kindStats.unexpected.push(`${status} ${body.slice(0, 200)}`);
      else kindStats.unexpected.push("");
    }
  }

  /**
   * Counts the client's admitted and refused API calls and the devices registered; false for an
   * answer the item cannot get.
   */
  private countOutcome(item: Item, status: number, body: string): boolean {
    if (item.kind === "password, wrong") return status === 400 && body.includes('"error":"invalid_grant"');
    if (!API_KINDS.has(item.kind as Kind)) return status === 200;
    const client = item.client!;
    let expected = true;
    if (status >= 200 && status < 300) client.admitted += 1;
    else if (status === 420) client.refused += 1;
    else expected = false;
    if (item.kind === "devices" && status === 201) {
      const hash = (JSON.parse(body) as { data?: { hash?: string } }).data?.hash;
      if (typeof hash === "string") this.devices.push({ hash, userId: item.userId!, clientId: client.id });
      else expected = false;
    }
    return expected;
  }
}
