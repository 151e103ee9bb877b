import { randomUUID } from 'node:crypto'
import { relaysSchema, upsertHeartbeat } from './schema.js'
import type { StoreDb } from './store-db.js'

/**
 * Who else is relaying this outbox: each relay writes a heartbeat row every `ttlMs / 3` and counts the rows seen
 * within the last `ttlMs` (itself included). Its fair share of the partitions is `ceil(partitions / live)`.
 *
 * The count only steers balance, never safety: one active relay per partition comes from the partition leases.
 * Heartbeats carry each relay's own clock, so a skew between hosts larger than the TTL can miscount (a relay
 * taking too few or too many partitions for a while), not double-publish. A relay that dies stops counting after
 * `ttlMs`, about when its partition leases expire, so the survivors' shares grow just as its partitions free up.
 */
export class RelayMembership {
  readonly id = randomUUID()
  private readonly table: string
  private lastBeat = 0
  private live = 1

  constructor(
    private readonly db: StoreDb,
    private readonly ttlMs: number,
  ) {
    this.table = `${db.prefix}outbox_relays`
  }

  /** Relays alive now (at least 1: this one), refreshed from the table at most every `ttlMs / 3`. */
  async liveRelays(): Promise<number> {
    const now = Date.now()
    if (now - this.lastBeat < this.ttlMs / 3) return this.live
    await this.db.ensure(relaysSchema(this.db.dialect, this.db.prefix))
    await this.db.query(upsertHeartbeat(this.db.dialect, this.table), [this.id, now])
    const { rows } = await this.db.query(`SELECT COUNT(*) AS n FROM ${this.table} WHERE seen_at > ?`, [
      now - this.ttlMs,
    ])
    // Rows of relays long gone (killed, never said goodbye) would otherwise stay forever.
    await this.db.query(`DELETE FROM ${this.table} WHERE seen_at < ?`, [now - 10 * this.ttlMs])
    this.live = Math.max(1, Number(rows[0]?.n ?? 1))
    this.lastBeat = now
    return this.live
  }

  /** Forces a fresh count on the next call (a partition was lost: someone may have joined or left). */
  stale(): void {
    this.lastBeat = 0
  }

  /** Removes this relay's row so the others take its share at once rather than after the TTL. */
  async leave(): Promise<void> {
    await this.db.query(`DELETE FROM ${this.table} WHERE relay_id = ?`, [this.id]).catch(() => undefined)
  }
}
