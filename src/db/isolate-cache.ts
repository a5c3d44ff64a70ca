/**
 * Records kept in the isolate's memory for a short time, so that a hot read needs no round trip.
 * Bounded: at most `maxEntries`, the one loaded longest ago dropped first (a Map keeps insertion
 * order, and a reload is a new insertion).
 */
export class IsolateCache<V> {
  private readonly entries = new Map<string, { value: V; loadedAt: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 1_000,
  ) {}

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    return entry && Date.now() - entry.loadedAt < this.ttlMs ? entry.value : undefined;
  }

  /** Keeps `value`, or forgets the key when it is undefined (nothing is cached for what is not found). */
  set(key: string, value: V | undefined): void {
    this.entries.delete(key);
    if (value === undefined) return;
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { value, loadedAt: Date.now() });
  }

  /** The cached value, else `load`'s (then cached); always `load`'s when `fresh`, which is cached too. */
  async read<Loaded extends V | undefined>(
    key: string,
    load: () => Promise<Loaded>,
    fresh: boolean,
  ): Promise<V | Loaded> {
    const cached = fresh ? undefined : this.get(key);
    if (cached !== undefined) return cached;
    const value = await load();
    this.set(key, value);
    return value;
  }
}
