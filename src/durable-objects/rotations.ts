/**
 * Where a grant's rotated refresh tokens are rotated (oauth/self-contained-refresh-tokens.ts): each
 * token carries its grant and a generation under a MAC, and this table keeps each grant's current
 * generation, the one presented to make it, and when. A rotation advances the generation only
 * from the current one, or, asked to replace a successor (the grace window), only while that
 * successor is still the current one and unused. Anything else writes nothing and answers the
 * grant's state, which the caller judges (oauth/grants/refresh-token.ts): an earlier token is
 * reuse, and the caller ends the grant. So a call that lands after its caller gave up (a stall)
 * changes nothing that matters: it cannot end a grant, nor replace a token it did not see.
 * Table `rotations`.
 *
 * The rotations that arrive within one turn of the event loop are decided and written in one
 * transaction at the next (a group commit): each decision reads what the ones before it in the
 * queue wrote, and no answer leaves before the transaction that holds it is durable (the output
 * gate). A failed transaction answers every waiting caller with its error, and writes nothing.
 */
import { inRotationGrace } from "../oauth/refresh-tokens";
import { type ExpiringRecords, scheduleCleanup } from "./expiry-alarm";
import type { Rotation } from "./rate-limiter-rpc";
import type { Revocations } from "./revocations";

/** A rotation asked for (rate-limiter.ts's rotateGrant says what each field is). */
type RotationRequest = {
  grant: string;
  generation: number;
  now: number;
  keepUntilMs: number;
  replacing: number | undefined;
};

type Pending = { request: RotationRequest; resolve: (rotation: Rotation) => void; reject: (err: unknown) => void };

type RotationRow = { generation: number; made_from: number; rotated_at: number };

export class Rotations implements ExpiringRecords {
  private queue: Pending[] = [];

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly revocations: Revocations,
  ) {
    storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS rotations (grant_id TEXT PRIMARY KEY, generation INTEGER NOT NULL, made_from INTEGER NOT NULL, rotated_at INTEGER NOT NULL, expires_at INTEGER NOT NULL)",
    );
    storage.sql.exec("CREATE INDEX IF NOT EXISTS rotations_expires_at ON rotations (expires_at)");
  }

  /** Rotates as `request` asks, once the rotations queued before it are decided. */
  rotate(request: RotationRequest): Promise<Rotation> {
    return new Promise((resolve, reject) => {
      if (this.queue.length === 0) setTimeout(() => void this.flush(), 0);
      this.queue.push({ request, resolve, reject });
    });
  }

  /** The grant's current generation (0 before its first rotation), for introspection; null once it has ended. */
  current(grant: string): number | null {
    if (this.revocations.isGrantEnded(grant)) return null;
    return this.row(grant)?.generation ?? 0;
  }

  private async flush(): Promise<void> {
    const batch = this.queue;
    this.queue = [];
    let rotations: Rotation[];
    try {
      rotations = this.storage.transactionSync(() => batch.map(({ request }) => this.decide(request)));
    } catch (err) {
      for (const { reject } of batch) reject(err);
      return;
    }
    batch.forEach(({ resolve }, i) => resolve(rotations[i]!));
    // Space is reclaimed by the alarm, which any later write arms again if this fails: no part of
    // the answers, already given.
    const earliest = Math.min(...batch.map(({ request }) => request.keepUntilMs));
    await scheduleCleanup(this.storage, earliest).catch(() => {});
  }

  private decide({ grant, generation, now, keepUntilMs, replacing }: RotationRequest): Rotation {
    if (this.revocations.isGrantEnded(grant)) return { outcome: "ended" };
    const row = this.row(grant);
    const current = row?.generation ?? 0;
    const advances =
      replacing === undefined
        ? generation === current
        : row !== undefined &&
          current === replacing &&
          row.made_from === generation &&
          inRotationGrace({ rotated: row.rotated_at }, now);
    if (!advances) {
      return { outcome: "behind", current, madeFrom: row?.made_from ?? null, rotatedAt: row?.rotated_at ?? null };
    }
    // A replacement keeps the window's start: the window runs from the presented token's own
    // rotation, however often it is presented again within it (as for a grant-row token).
    const rotatedAt = replacing === undefined ? now : row!.rotated_at;
    this.storage.sql.exec(
      "REPLACE INTO rotations (grant_id, generation, made_from, rotated_at, expires_at) VALUES (?, ?, ?, ?, max(?, coalesce((SELECT expires_at FROM rotations WHERE grant_id = ?), 0)))",
      grant,
      current + 1,
      generation,
      rotatedAt,
      keepUntilMs,
      grant,
    );
    return { outcome: "rotated", generation: current + 1 };
  }

  private row(grant: string): RotationRow | undefined {
    return this.storage.sql
      .exec<RotationRow>("SELECT generation, made_from, rotated_at FROM rotations WHERE grant_id = ?", grant)
      .toArray()[0];
  }

  deleteExpired(now: number): void {
    this.storage.sql.exec("DELETE FROM rotations WHERE expires_at <= ?", now);
  }

  nextExpiry(): number | null {
    return this.storage.sql.exec<{ next: number | null }>("SELECT min(expires_at) AS next FROM rotations").one().next;
  }
}
