import { createLocks, type Lease, type Locks } from 'latchkey'
import { TxError } from '../errors.js'
import type { Row } from '../store/sql-driver.js'
import { crashPoint } from './crash-point.js'
import { partitionOf } from './partition.js'
import { RelayMembership } from './relay-membership.js'
import {
  backoffDelay,
  type RelayEvent,
  type RelayOptions,
  type ResolvedRelayOptions,
  resolveRelayOptions,
} from './relay-options.js'
import { outboxSchema } from './schema.js'
import type { StoreDb } from './store-db.js'
import type { OutgoingMessage, PublishOutcome } from './types.js'

export type { RelayEvent, RelayOptions }

interface PendingRow extends OutgoingMessage {
  readonly seq: number
}

const UNAVAILABLE = 'PUBLISHER_UNAVAILABLE'

/**
 * Publishes committed outbox rows. Each partition is held through a latchkey lease on the outbox's own database,
 * so among several relays (processes) one at a time publishes a partition. Relays split the partitions: each
 * holds at most `ceil(partitions / live relays)` (live relays counted from a heartbeat table), gives extras back
 * when another relay joins and takes more when one leaves or dies. Within a partition, a key's rows go out one at
 * a time in insert order, the next only after the broker confirmed the previous one; rows of different keys are
 * pipelined together, and the held partitions are drained concurrently. A row is marked sent only after its
 * confirm, so a crash means a re-send, never a loss. Runs until `close()`.
 */
export class OutboxRelay {
  private readonly o: ResolvedRelayOptions
  private readonly locks: Locks
  private readonly leases = new Map<number, Lease>()
  private readonly table: string
  private readonly membership: RelayMembership
  /** Where this relay starts looking for free partitions, so relays starting together try different ones first. */
  private readonly firstPartition: number
  private lastScan = 0
  private closed = false
  private wake: (() => void) | undefined
  private readonly loop: Promise<void>

  /** @internal Made by `outbox.relay(options)`. */
  constructor(
    private readonly db: StoreDb,
    private readonly partitions: number,
    options: RelayOptions,
    private readonly onClose: () => void,
  ) {
    this.o = resolveRelayOptions(options)
    this.table = `${db.prefix}outbox`
    this.locks = createLocks({ backend: db.lockBackend(), namespace: `${db.prefix}outbox`, ttlMs: this.o.leaseTtlMs })
    this.membership = new RelayMembership(db, this.o.leaseTtlMs)
    this.firstPartition = partitionOf(this.membership.id, partitions)
    this.loop = this.run()
  }

  /** Partitions this relay currently holds, ascending. */
  get heldPartitions(): number[] {
    return [...this.leases.keys()].sort((a, b) => a - b)
  }

  /** Stops after the current wave, releases the leases and closes the publisher. Idempotent. */
  async close(): Promise<void> {
    this.closed = true
    this.wake?.()
    await this.loop
    await this.membership.leave()
    await this.locks.close()
    this.leases.clear()
    await this.o.publisher.close().catch(() => undefined)
    this.onClose()
  }

  private emit(event: RelayEvent): void {
    try {
      this.o.onEvent?.(event)
    } catch {
      // A listener's bug must not stop the relay.
    }
  }

  private async run(): Promise<void> {
    let outages = 0
    while (!this.closed) {
      try {
        await this.db.ensure(outboxSchema(this.db.dialect, this.db.prefix))
        await this.rebalance()
        // Partitions drain concurrently: each has its own wave of confirms in flight. Every drain is awaited
        // (allSettled) before the next pass, so a partition never has two drains at once.
        const drains = await Promise.allSettled(
          [...this.leases].map(([partition, lease]) => this.drainPartition(partition, lease)),
        )
        const failed = drains.find((d): d is PromiseRejectedResult => d.status === 'rejected')
        if (failed !== undefined) throw failed.reason
        const busy = drains.some((d) => d.status === 'fulfilled' && d.value)
        outages = 0
        if (!busy) await this.pause(this.o.pollMs)
      } catch (error) {
        outages++
        this.emit({ type: 'error', error: asError(error) })
        await this.pause(backoffDelay(outages, this.o))
      }
    }
  }

  private pause(ms: number): Promise<void> {
    if (this.closed) return Promise.resolve()
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms)
      this.wake = () => {
        clearTimeout(timer)
        resolve()
      }
    })
  }

  /**
   * Drops lost leases, gives back partitions above this relay's share (so a relay that joined can take them) and
   * takes free ones up to the share. Free partitions are looked for at most every `max(pollMs, leaseTtlMs / 3)`
   * while this relay holds some, since each look is a database round trip per partition.
   */
  private async rebalance(): Promise<void> {
    for (const [partition, lease] of this.leases) {
      if (!lease.signal.aborted) continue
      this.leases.delete(partition)
      this.membership.stale()
      this.emit({ type: 'partition-lost', partition })
    }
    const share = Math.ceil(this.partitions / (await this.membership.liveRelays()))
    for (const partition of this.heldPartitions.reverse()) {
      if (this.leases.size <= share) break
      const lease = this.leases.get(partition) as Lease
      this.leases.delete(partition)
      await lease.release().catch(() => undefined) // a lease already lost needs no release
      this.emit({ type: 'partition-released', partition })
    }
    const now = Date.now()
    const every = Math.max(this.o.pollMs, this.o.leaseTtlMs / 3)
    if (this.leases.size >= share || (this.leases.size > 0 && now - this.lastScan < every)) return
    this.lastScan = now
    for (let i = 0; i < this.partitions && this.leases.size < share && !this.closed; i++) {
      const partition = (this.firstPartition + i) % this.partitions
      if (this.leases.has(partition)) continue
      const lease = await this.locks.mutex(`p${partition}`).tryAcquire()
      if (lease === undefined) continue
      this.leases.set(partition, lease)
      this.emit({ type: 'partition-acquired', partition })
    }
  }

  /**
   * One pass over a partition's oldest pending rows; true when it published or recorded something. A wave's
   * mark runs while the next wave is published (one mark in flight at most, settled before the next one starts
   * and before the pass ends): a key's next row still goes out only after the previous one's confirm, so order
   * per key is unchanged, and a crash before a mark lands re-sends confirmed rows in their order, as a crash
   * between confirm and mark always did.
   */
  private async drainPartition(partition: number, lease: Lease): Promise<boolean> {
    const queues = await this.readQueues(partition)
    let progressed = false
    let marking: Promise<Error | undefined> = Promise.resolve(undefined)
    const settleMark = async () => {
      const error = await marking
      marking = Promise.resolve(undefined)
      if (error !== undefined) throw error
    }
    try {
      while (queues.size > 0 && !lease.signal.aborted && !this.closed) {
        // One wave: the oldest unsent row of every key, so no key ever has two rows in flight.
        const wave = [...queues.values()].map((queue) => queue[0] as PendingRow)
        const outcomes = await this.o.publisher.publish(wave)
        crashPoint('after-confirm')
        await settleMark()
        const sent = wave.filter((_, i) => outcomes[i] === 'ok')
        if (sent.length > 0) {
          const ids = sent.map((row) => row.id)
          marking = this.markSent(sent).then(
            () => {
              this.emit({ type: 'published', partition, ids })
              return undefined
            },
            (error: unknown) => asError(error),
          )
          progressed = true
        }
        let unavailable: Error | undefined
        for (const [i, row] of wave.entries()) {
          const outcome: PublishOutcome = outcomes[i] ?? new Error('publisher returned no outcome')
          const queue = queues.get(row.key) as PendingRow[]
          if (outcome === 'ok') {
            queue.shift()
            if (queue.length === 0) queues.delete(row.key)
          } else if ((outcome as { code?: unknown }).code === UNAVAILABLE) {
            unavailable = outcome
          } else {
            queues.delete(row.key) // its later rows wait for this one's retry
            await this.recordFailure(partition, row, outcome)
            progressed = true
          }
        }
        // No broker: the rows keep their attempts; the relay as a whole backs off (in run()).
        if (unavailable !== undefined) throw unavailable
      }
      await settleMark()
    } finally {
      // Never a mark left running past the pass (a released partition's next holder must see it landed); its
      // error is dropped only when another one is already on its way out.
      await marking
    }
    return progressed
  }

  /** Pending rows of a partition grouped per key in insert order, minus keys held back by an earlier row. */
  private async readQueues(partition: number): Promise<Map<string, PendingRow[]>> {
    // A dead row holds back its key's later rows until it is requeued or discarded: order per key is kept. In the same
    // statement as the pending rows: read apart, a requeue landing between the two reads let a key's later row go out
    // before its requeued dead one (seen once in the dead-letter test: k1-1 delivered before k1-0).
    const { rows } = await this.db.query(
      `SELECT seq, message_id, topic, msg_key, payload, headers, attempts, next_attempt_at FROM ${this.table} p
       WHERE part = ? AND status = 'pending' AND NOT EXISTS (
         SELECT 1 FROM ${this.table} d WHERE d.part = p.part AND d.msg_key = p.msg_key AND d.status = 'dead')
       ORDER BY seq LIMIT ${this.o.batchSize}`,
      [partition],
    )
    const queues = new Map<string, PendingRow[]>()
    if (rows.length === 0) return queues
    const blocked = new Set<string>()
    const now = Date.now()
    for (const row of rows) {
      const key = String(row.msg_key)
      if (blocked.has(key)) continue
      if (Number(row.next_attempt_at) > now) {
        blocked.add(key) // backing off: nothing of this key may overtake it
        continue
      }
      const queue = queues.get(key) ?? []
      queue.push(toPending(row))
      queues.set(key, queue)
    }
    return queues
  }

  private async markSent(rows: readonly PendingRow[]): Promise<void> {
    const marks = rows.map(() => '?').join(', ')
    await this.db.query(`UPDATE ${this.table} SET status = 'sent', sent_at = ? WHERE seq IN (${marks})`, [
      Date.now(),
      ...rows.map((row) => row.seq),
    ])
  }

  private async recordFailure(partition: number, row: PendingRow, error: Error): Promise<void> {
    const attempts = row.attempts + 1
    const dead = attempts >= this.o.maxAttempts
    const retryAt = Date.now() + backoffDelay(attempts, this.o)
    await this.db.query(
      `UPDATE ${this.table} SET status = ?, attempts = ?, next_attempt_at = ?, last_error = ? WHERE seq = ?`,
      [dead ? 'dead' : 'pending', attempts, retryAt, error.message.slice(0, 2000), row.seq],
    )
    const base = { partition, id: row.id, attempts, error }
    this.emit(dead ? { type: 'dead', ...base } : { type: 'failed', ...base, retryAt })
  }
}

function toPending(row: Row): PendingRow {
  return {
    seq: Number(row.seq),
    id: String(row.message_id),
    topic: String(row.topic),
    key: String(row.msg_key),
    payload: String(row.payload),
    headers: row.headers == null ? {} : (JSON.parse(String(row.headers)) as Record<string, string>),
    attempts: Number(row.attempts),
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new TxError(String(error))
}
