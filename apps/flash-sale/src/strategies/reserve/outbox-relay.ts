import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Redis } from 'ioredis'
import { evalScript, luaScript, readLuaFile } from 'latchkey/redis'
import type { SaleStore } from '../../store/types.js'
import type { ReserveKeys } from './redis-reserve.js'
import { parseReservation, type SettleOutcome, settleReservation } from './settle.js'

/** ack.lua: acknowledges and deletes settled entries; replies how many were acknowledged. */
const ACK = luaScript('ack', readLuaFile(new URL('./ack.lua', import.meta.url)), Number)

/** Where a test makes the relay's process kill itself (SIGKILL): after reading an entry, around its commit. */
export type RelayCrashPoint = 'before-commit' | 'after-commit'

/** Options of {@link OutboxRelay}. */
export interface RelayOptions {
  /** Consumer group shared by every relay of the deployment. Default `settlers`. */
  readonly group?: string
  /** This relay's consumer name. Default `<host>:<pid>:<random>` (a restarted process is a new consumer). */
  readonly consumer?: string
  /** An entry delivered this long ago and still not acknowledged is taken over (XAUTOCLAIM). Default 5 000. */
  readonly claimIdleMs?: number
  /** Entries read at a time. Default 100. */
  readonly batch?: number
  /**
   * Fault injection for tests: SIGKILL this process at `at` of the entry that follows `after` settled ones
   * (default 0, the first). `before-commit`: read, not written; `after-commit`: written, not acknowledged.
   */
  readonly crash?: { readonly at: RelayCrashPoint; readonly after?: number }
  /** Where failures are reported (at most one line per 5 s). Default console.error. */
  readonly log?: (line: string) => void
}

/** What a relay has done since it started. */
export interface RelayStats {
  settled: number
  /** Redelivered entries whose order was already written (a relay died between commit and ack). */
  alreadySettled: number
  /** Entries taken over from a consumer that kept them past `claimIdleMs` (a dead or stuck relay). */
  claimed: number
  deadLettered: number
  failures: number
}

type StreamEntry = [id: string, fields: string[]]

/** A consumer unheard of for this long, holding nothing, is removed from the group. */
const FORGET_CONSUMER_MS = 60_000

/**
 * The `reserve` strategy's back half, run by every service process: reads reservations from the outbox
 * stream as a member of one consumer group, writes each to the SQL store ({@link settleReservation}:
 * idempotent), and acknowledges (and deletes) the entry only after the store committed. An entry whose
 * relay died before acknowledging stays pending in the group and is taken over by a live relay after
 * `claimIdleMs` (XAUTOCLAIM), so a crash anywhere between reserve and durable write neither loses an order
 * (the entry is still there) nor doubles one (the order id is unique in the store).
 *
 * @example
 * const relay = new OutboxRelay(store, reserve.client, new Redis(url), reserve.keys)
 * relay.start()
 * await relay.close() // finishes the entries in hand; the blocking client is disconnected
 */
export class OutboxRelay {
  readonly stats: RelayStats = { settled: 0, alreadySettled: 0, claimed: 0, deadLettered: 0, failures: 0 }
  private readonly group: string
  private readonly consumer: string
  private readonly claimIdleMs: number
  private readonly batch: number
  private running: Promise<void> | undefined
  private stopping = false
  private isReading = false
  private hasGroup = false
  private nextClaimAt = 0
  private lastLogAt = -Infinity

  /** `client` runs commands, `blocking` only the blocking reads (this relay disconnects it on close). */
  constructor(
    private readonly store: SaleStore,
    private readonly client: Redis,
    private readonly blocking: Redis,
    private readonly keys: ReserveKeys,
    private readonly options: RelayOptions = {},
  ) {
    this.group = options.group ?? 'settlers'
    this.consumer = options.consumer ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`
    this.claimIdleMs = options.claimIdleMs ?? 5_000
    this.batch = options.batch ?? 100
  }

  /** Starts settling in the background (the returned promise of `close()` reports when it stopped). */
  start(): void {
    this.running ??= this.run()
  }

  /** Stops after the entries in hand are settled; leaves the group if nothing is pending for it. */
  async close(): Promise<void> {
    this.stopping = true
    if (this.isReading) this.blocking.disconnect()
    await this.running
    this.blocking.disconnect()
    await this.leaveGroup().catch((error: unknown) => this.report('leaving the consumer group', error))
  }

  private async run(): Promise<void> {
    let failures = 0
    while (!this.stopping) {
      try {
        if (!this.hasGroup) await this.createGroup()
        if (performance.now() >= this.nextClaimAt) await this.claimAbandoned()
        await this.settleAll(await this.readNew())
        failures = 0
      } catch (error) {
        if (this.stopping) break
        // The group is gone (a Redis restarted without persistence, a FLUSHALL): create it again.
        if (String((error as Error).message).startsWith('NOGROUP')) this.hasGroup = false
        this.stats.failures++
        this.report('settling the outbox', error)
        failures++
        await sleep(Math.min(2_000, 50 * 2 ** failures))
      }
    }
  }

  private async createGroup(): Promise<void> {
    try {
      // From the stream's start: reservations made before any relay ran are settled too.
      await this.client.xgroup('CREATE', this.keys.outbox, this.group, '0', 'MKSTREAM')
    } catch (error) {
      if (!String((error as Error).message).startsWith('BUSYGROUP')) throw error
    }
    this.hasGroup = true
  }

  /** New entries for this consumer, waiting at most until the next claim round. */
  private async readNew(): Promise<StreamEntry[]> {
    const blockMs = Math.max(1, Math.min(2_000, Math.ceil(this.nextClaimAt - performance.now())))
    this.isReading = true
    try {
      if (this.stopping) return []
      const reply = (await this.blocking.xreadgroup(
        'GROUP',
        this.group,
        this.consumer,
        'COUNT',
        this.batch,
        'BLOCK',
        blockMs,
        'STREAMS',
        this.keys.outbox,
        '>',
      )) as Array<[string, StreamEntry[]]> | null
      return reply?.[0]?.[1] ?? []
    } finally {
      this.isReading = false
    }
  }

  /** Takes over entries pending longer than `claimIdleMs` (their relay died or is stuck) and settles them. */
  private async claimAbandoned(): Promise<void> {
    let start = '0-0'
    do {
      const [next, entries] = (await this.client.xautoclaim(
        this.keys.outbox,
        this.group,
        this.consumer,
        this.claimIdleMs,
        start,
        'COUNT',
        this.batch,
      )) as [string, Array<StreamEntry | null>]
      // Redis 6.2 lists entries deleted meanwhile as nil; 7 leaves them out.
      const live = entries.filter((e): e is StreamEntry => e !== null)
      this.stats.claimed += live.length
      await this.settleAll(live)
      start = next
    } while (start !== '0-0' && !this.stopping)
    await this.forgetDeadConsumers()
    this.nextClaimAt = performance.now() + this.claimIdleMs / 2
  }

  private async settleAll(entries: readonly StreamEntry[]): Promise<void> {
    for (const [id, fields] of entries) {
      const reservation = parseReservation(fields)
      if (reservation === undefined) {
        await this.deadLetter(id, fields, 'malformed')
        continue
      }
      this.crashAt('before-commit')
      const outcome = await settleReservation(this.store, reservation)
      if (outcome === 'short' || outcome === 'conflict') {
        await this.deadLetter(id, fields, outcome)
        continue
      }
      this.crashAt('after-commit')
      await evalScript(this.client, ACK, [this.keys.outbox], [this.group, id])
      this.count(outcome)
    }
  }

  private count(outcome: SettleOutcome): void {
    if (outcome === 'settled') this.stats.settled++
    else if (outcome === 'already') this.stats.alreadySettled++
  }

  /** The test hook: dies like a `kill -9` would, at this point of the entry that follows `after` settled ones. */
  private crashAt(point: RelayCrashPoint): void {
    const crash = this.options.crash
    if (crash?.at === point && this.stats.settled + this.stats.alreadySettled >= (crash.after ?? 0)) {
      process.kill(process.pid, 'SIGKILL')
    }
  }

  /** Keeps an entry the store refused in the dead-letter stream (for a human), then acknowledges it. */
  private async deadLetter(id: string, fields: readonly string[], reason: string): Promise<void> {
    this.report(`outbox entry ${id} (${fields.join(' ')})`, new Error(`not settled: ${reason}`))
    await this.client.xadd(this.keys.deadLetters, '*', 'entry', id, 'reason', reason, ...fields)
    await evalScript(this.client, ACK, [this.keys.outbox], [this.group, id])
    this.stats.deadLettered++
  }

  /** Removes consumers of dead processes once they hold nothing (a restarted process is a new consumer). */
  private async forgetDeadConsumers(): Promise<void> {
    const consumers = (await this.client.xinfo('CONSUMERS', this.keys.outbox, this.group)) as unknown[][]
    for (const info of consumers) {
      const fields = new Map<unknown, unknown>()
      for (let i = 0; i + 1 < info.length; i += 2) fields.set(info[i], info[i + 1])
      const name = String(fields.get('name'))
      if (name === this.consumer || Number(fields.get('pending')) > 0) continue
      if (Number(fields.get('idle')) > FORGET_CONSUMER_MS) {
        await this.client.xgroup('DELCONSUMER', this.keys.outbox, this.group, name)
      }
    }
  }

  private async leaveGroup(): Promise<void> {
    const pending = (await this.client.xpending(this.keys.outbox, this.group, '-', '+', 1, this.consumer)) as unknown[]
    // DELCONSUMER drops the consumer's pending entries, so only an empty-handed consumer leaves.
    if (pending.length === 0) await this.client.xgroup('DELCONSUMER', this.keys.outbox, this.group, this.consumer)
  }

  private report(what: string, error: unknown): void {
    const now = performance.now()
    if (now - this.lastLogAt < 5_000) return
    this.lastLogAt = now
    ;(this.options.log ?? console.error)(`flash-sale relay ${this.consumer}: ${what} failed: ${String(error)}`)
  }
}
