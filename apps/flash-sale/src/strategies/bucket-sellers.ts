/**
 * One seller per stock bucket in each service process: buyers of a bucket line up here, in memory, and the
 * seller takes the bucket's latchkey lock once for a run of them.
 *
 * Why not one lock hold per buyer (as before): the stock of a `lock` sale is sold one unit at a time, so the
 * lock's round trips and its handoff between processes are the sale's critical path. Per buyer, a hold cost an
 * acquire and a release (two write transactions on a SQLite lock file, two scripts on Redis), a fenced claim
 * (a write) before the order's write, and, when the other process was next in the lock's queue, a wake-up of that
 * process (inotify, pub/sub) that waits until its event loop gets to it. Measured on 2 cores (bench/flash-sale.ts,
 * SQLite store and locks): `lock` sold 300 units in 4-5x the time of `db-atomic`'s conditional UPDATE. Holding the
 * lock for up to {@link HOLD_MAX} queued buyers pays those once per run instead.
 *
 * Nothing is weakened by it: every write is still fenced by the lease's token. The claim at the start of a hold
 * records the token as the bucket's fence and reads its stock; while the token stays the fence, no one else wrote
 * the bucket (any other writer, a seller of another process or a payment's release, holds the lock and claims with
 * a higher token), so the seller knows the stock without reading it again. A write refused by the fence (a lease
 * lost, a later holder came) ends the hold; after an error the next write claims and reads again. A lost lease
 * ends the hold before the next write.
 *
 * Within a hold the buyers in line are sold in runs, one store call per run (`sellRun`): on the SQLite store a run
 * is one transaction, claim included, so one commit pays for all its orders. Per order, the commit was the largest
 * cost left (bench/flash-sale-cpu.ts). The seller starts on the turn after its first buyer, so that the buyers whose
 * requests arrived together share its first hold: with a memory lock, a seller started at once finished its hold
 * within the first buyer's turn, a hold and two commits (claim, order) per buyer.
 */
import { isLockError, LockTimeoutError } from 'latchkey'
import type { BuyOutcome, Sale } from '../store/types.js'
import type { BuyContext } from './buy.js'

/**
 * Buyers one hold serves at most before the seller releases the lock and lines up again, so that the sellers
 * of other processes get their turn (the backend queues waiters fairly).
 */
export const HOLD_MAX = 32

/** How many times a buyer retries after its fenced write was refused (a lease lost mid-write). */
export const STALE_RETRIES = 3

/** Thrown when a fenced write kept being refused; the service answers 503. */
export class StaleWriteError extends Error {
  constructor(saleId: string) {
    super(`flash-sale: the stock write of sale ${saleId} was fenced off ${STALE_RETRIES} times (lock leases lost)`)
    this.name = 'StaleWriteError'
  }
}

/** A buyer waiting for the seller of a bucket. */
interface Ticket {
  readonly userId: string
  readonly quantity: number
  /** performance.now() after which the buyer is told 503 rather than kept waiting for the lock. */
  readonly deadline: number
  /** Fenced writes of this buyer refused so far. */
  stale: number
  readonly resolve: (outcome: BuyOutcome) => void
  readonly reject: (error: unknown) => void
}

/** The line of one bucket in this process (its seller runs while the line is not empty). */
interface Line {
  readonly ctx: BuyContext
  readonly sale: Sale
  readonly bucket: number
  readonly name: string
  readonly tickets: Ticket[]
}

/**
 * The buyers of every bucket served in this process, one seller per bucket.
 *
 * @example
 * const sellers = new BucketSellers()
 * const outcome = await sellers.buy(ctx, sale, 0, 'u1', 1)
 */
export class BucketSellers {
  private readonly lines = new Map<string, Line>()

  /**
   * Sells `quantity` units of `bucket` to `userId` under the bucket's lock: `ordered`, `sold-out` or `duplicate`.
   * Rejects with a lock error when the lock could not be had within `ctx.lockWaitMs` (the service answers 503).
   */
  buy(ctx: BuyContext, sale: Sale, bucket: number, userId: string, quantity: number): Promise<BuyOutcome> {
    const name = lineName(sale.id, bucket)
    return new Promise<BuyOutcome>((resolve, reject) => {
      const ticket: Ticket = {
        userId,
        quantity,
        deadline: performance.now() + ctx.lockWaitMs,
        stale: 0,
        resolve,
        reject,
      }
      const line = this.lines.get(name)
      if (line !== undefined) {
        line.tickets.push(ticket)
        return
      }
      const started: Line = { ctx, sale, bucket, name, tickets: [ticket] }
      this.lines.set(name, started)
      // Started on the next turn of the event loop: the buyers whose requests arrived in this turn line up
      // first and share the first hold and run (without it, a lock taken at once sold to one buyer per hold).
      setImmediate(() => void this.sell(started))
    })
  }

  /** One of `buckets` of the sale whose seller is at work in this process (its hold can take one buyer more). */
  selling(saleId: string, buckets: readonly number[]): number | undefined {
    return buckets.find((bucket) => this.lines.has(lineName(saleId, bucket)))
  }

  /** Buckets with buyers in line (for tests). */
  get size(): number {
    return this.lines.size
  }

  /** The seller of one bucket: holds after holds until its line is empty. */
  private async sell(line: Line): Promise<void> {
    const { ctx, sale, bucket, name, tickets } = line
    const lock = ctx.locks.mutex(name)
    try {
      while (tickets.length > 0) {
        // Buyers in line behind the last units learn they are too late from a plain read, without the lock
        // (final: stock only decreases outside a hold).
        const stock = (await ctx.store.buckets(sale.id)).find((b) => b.bucket === bucket)?.remain ?? 0
        answerShort(tickets, stock)
        const head = tickets[0]
        if (head === undefined) break
        const waitMs = Math.floor(head.deadline - performance.now())
        try {
          if (waitMs <= 0) throw new LockTimeoutError(name, ctx.lockWaitMs)
          await lock.withLock((lease) => this.serve(line, lease), { waitMs, ttlMs: ctx.lockTtlMs })
        } catch (error) {
          // The head waited its whole time (or the backend failed it): it is told, and so is every buyer whose
          // time ran out meanwhile; the others wait for the next hold.
          const now = performance.now()
          for (let i = tickets.length - 1; i >= 0; i--) {
            const t = tickets[i] as Ticket
            if (t === head || (isLockError(error) && t.deadline <= now)) {
              tickets.splice(i, 1)
              t.reject(error)
            }
          }
        }
      }
    } catch (error) {
      // Only a bug or the store failing its read gets here: nobody may be left waiting.
      for (const t of tickets.splice(0)) t.reject(error)
    } finally {
      this.lines.delete(name)
    }
  }

  /**
   * One hold: serves the line's buyers in order, at most {@link HOLD_MAX}, in runs: each run is every buyer in
   * line at that moment, sold by one store call (on SQLite one transaction, so one commit for the run).
   */
  private async serve(line: Line, lease: { readonly token: bigint; readonly signal: AbortSignal }): Promise<void> {
    const { ctx, sale, bucket, tickets } = line
    /** The bucket's stock as of the last claim or write of this hold; undefined until (re)claimed. */
    let known: number | undefined
    let served = 0
    while (served < HOLD_MAX) {
      // A lost lease ends the hold before the next write (the fence would refuse it anyway).
      if (tickets.length === 0 || lease.signal.aborted) return
      // Buyers joining while the run is written wait for the next run; nothing else takes from the line meanwhile.
      const run = tickets.slice(0, HOLD_MAX - served)
      const result = await ctx.store.sellRun(sale.id, bucket, lease.token, known, run, lease.signal)
      known = result.remain
      let done = 0
      for (const outcome of result.outcomes) {
        // A higher token got to the bucket first: this lease is stale. That buyer retries in a later hold.
        if (outcome.status === 'stale') break
        const t = run[done++] as Ticket
        if (outcome.status === 'error') t.reject(outcome.error)
        else t.resolve(outcome)
      }
      tickets.splice(0, done)
      served += done
      if (done < result.outcomes.length) {
        staleAgain(tickets, sale)
        return
      }
    }
  }
}

/** The lock name of a bucket, which also names its line. */
function lineName(saleId: string, bucket: number): string {
  return `sale:${saleId}:${bucket}`
}

/** Answers `sold-out` to every buyer wanting more than `stock` units. */
function answerShort(tickets: Ticket[], stock: number): void {
  for (let i = tickets.length - 1; i >= 0; i--) {
    const t = tickets[i] as Ticket
    if (t.quantity > stock) {
      tickets.splice(i, 1)
      t.resolve({ status: 'sold-out' })
    }
  }
}

/** The head's write was fenced off once more: it is told 503 after {@link STALE_RETRIES}, else retried. */
function staleAgain(tickets: Ticket[], sale: Sale): void {
  const head = tickets[0]
  if (head === undefined || ++head.stale < STALE_RETRIES) return
  tickets.shift()
  head.reject(new StaleWriteError(sale.id))
}
