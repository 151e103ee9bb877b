import { type Locks, LockTimeoutError } from 'latchkey'
import type { BuyOutcome, Sale, SaleStore } from '../store/types.js'
import type { LocalQueue } from './local-queue.js'
import type { RedisReserve } from './reserve/redis-reserve.js'

/** What a strategy needs from the service. */
export interface BuyContext {
  readonly store: SaleStore
  readonly locks: Locks
  /** How long a buyer waits for a stock lock (local queue included) before the service answers 503. */
  readonly lockWaitMs: number
  /** Lease length of a stock lock (renewed while held). */
  readonly lockTtlMs: number
  /** One waiter per process on each lock; the others queue here. */
  readonly queue: LocalQueue
  /** The `reserve` strategy's Redis side; undefined when the service has no Redis. */
  readonly reserve?: RedisReserve | undefined
}

/** How many times a buyer retries after its fenced write was refused (a lease lost mid-write). */
const STALE_RETRIES = 3

/** Thrown when a fenced write kept being refused; the service answers 503. */
export class StaleWriteError extends Error {
  constructor(saleId: string) {
    super(`flash-sale: the stock write of sale ${saleId} was fenced off ${STALE_RETRIES} times (lock leases lost)`)
    this.name = 'StaleWriteError'
  }
}

/**
 * Answers from plain reads when the answer is already final: orders are never deleted and stock only
 * decreases, so a user seen ordered stays ordered and a bucket seen short stays short. Late buyers are
 * turned away without a write transaction or a lock (the usual seckill stock pre-check).
 */
async function precheck(
  ctx: BuyContext,
  sale: Sale,
  userId: string,
  quantity: number,
): Promise<BuyOutcome | undefined> {
  if ((await ctx.store.orderIdOf(sale.id, userId)) !== undefined) return { status: 'duplicate' }
  const buckets = await ctx.store.buckets(sale.id)
  if (buckets.every((b) => b.remain < quantity)) return { status: 'sold-out' }
  return undefined
}

/** Whether `bucket` is already too short for `quantity` (final: stock only decreases). */
async function isShort(ctx: BuyContext, sale: Sale, bucket: number, quantity: number): Promise<boolean> {
  const current = (await ctx.store.buckets(sale.id)).find((b) => b.bucket === bucket)
  return current === undefined || current.remain < quantity
}

/**
 * `db-atomic`: no lock at all, the database's row lock does it: one conditional UPDATE decrements the stock only
 * while enough is left (docs/background.md, "A flash sale without a lock").
 */
export async function buyAtomic(ctx: BuyContext, sale: Sale, userId: string, quantity: number): Promise<BuyOutcome> {
  return (await precheck(ctx, sale, userId, quantity)) ?? ctx.store.buyAtomic(sale.id, userId, quantity)
}

/**
 * Read-check-write of one bucket under its latchkey mutex. The read claims the bucket with `lease.token`
 * and the write is fenced by it, so a holder whose lease ran out while it worked cannot oversell: its
 * write is refused as `stale` once a later holder has touched the bucket. Once the order is committed, a lock
 * release that fails (the backend down, the lease lost) does not throw: withLock reports it as a `release-failed`
 * event and returns the outcome, so the buyer hears 201 for an order that is stored, never 503.
 */
export async function buyInBucket(
  ctx: BuyContext,
  sale: Sale,
  bucket: number,
  userId: string,
  quantity: number,
): Promise<BuyOutcome> {
  const name = `sale:${sale.id}:${bucket}`
  const lock = ctx.locks.mutex(name)
  const deadline = performance.now() + ctx.lockWaitMs
  return ctx.queue.run(name, async () => {
    // Buyers queued here behind the last units learn they are too late without touching the lock.
    if (await isShort(ctx, sale, bucket, quantity)) return { status: 'sold-out' }
    for (let attempt = 0; attempt < STALE_RETRIES; attempt++) {
      const waitMs = Math.floor(deadline - performance.now())
      if (waitMs <= 0) throw new LockTimeoutError(name, ctx.lockWaitMs)
      const outcome = await lock.withLock(
        async (lease): Promise<BuyOutcome> => {
          const remain = await ctx.store.claimBucket(sale.id, bucket, lease.token)
          if (remain === undefined) return { status: 'stale' }
          if (remain < quantity) return { status: 'sold-out' }
          // A lost lease stops us early; the fence would refuse the write anyway.
          lease.signal.throwIfAborted()
          // A second order of the same user fails on the orders' unique index and rolls back.
          return ctx.store.commitFenced(sale.id, bucket, remain - quantity, lease.token, userId, quantity)
        },
        { waitMs, ttlMs: ctx.lockTtlMs },
      )
      if (outcome.status !== 'stale') return outcome
    }
    throw new StaleWriteError(sale.id)
  })
}

/** `lock`: one latchkey mutex per item around read-check-write (a single bucket). */
export async function buyLocked(ctx: BuyContext, sale: Sale, userId: string, quantity: number): Promise<BuyOutcome> {
  return (await precheck(ctx, sale, userId, quantity)) ?? buyInBucket(ctx, sale, 0, userId, quantity)
}

/**
 * `sharded`: the stock is split into buckets, each with its own lock; a buyer starts at a random bucket
 * and moves on while buckets are short. An order is never split over buckets, so a buyer of several units
 * can be told "sold out" while a few units remain scattered (the usual price of sharding).
 */
export async function buySharded(ctx: BuyContext, sale: Sale, userId: string, quantity: number): Promise<BuyOutcome> {
  const early = await precheck(ctx, sale, userId, quantity)
  if (early !== undefined) return early
  const start = Math.floor(Math.random() * sale.buckets)
  // Each round re-reads the buckets, so buckets emptied meanwhile are skipped, not queued for.
  for (let round = 0; round <= sale.buckets; round++) {
    const all = await ctx.store.buckets(sale.id)
    const open = [...all.slice(start), ...all.slice(0, start)].filter((b) => b.remain >= quantity)
    const [next] = open
    if (next === undefined) break
    const outcome = await buyInBucket(ctx, sale, next.bucket, userId, quantity)
    if (outcome.status !== 'sold-out') return outcome
  }
  return { status: 'sold-out' }
}

/** Thrown for a `reserve` sale on a service started without Redis; the service answers 503. */
export class ReserveNotConfiguredError extends Error {
  constructor(saleId: string) {
    super(`flash-sale: sale ${saleId} uses the reserve strategy, but this service was started without --redis`)
    this.name = 'ReserveNotConfiguredError'
  }
}

/**
 * `reserve`: one Redis Lua script checks the buyer, takes the stock and appends the reservation to the
 * outbox, atomically; the relay writes the durable order to the store afterwards (see reserve/). No lock and
 * no SQL on the buyer's path: Redis alone decides, so no SQL pre-check either (it would lag the reservations);
 * once Redis answered "sold out", this process answers it from memory (stock only decreases).
 */
export async function buyReserved(ctx: BuyContext, sale: Sale, userId: string, quantity: number): Promise<BuyOutcome> {
  if (ctx.reserve === undefined) throw new ReserveNotConfiguredError(sale.id)
  return ctx.reserve.reserve(sale, userId, quantity)
}

/** The buy function of each strategy. */
export const BUY = Object.freeze({
  'db-atomic': buyAtomic,
  lock: buyLocked,
  reserve: buyReserved,
  sharded: buySharded,
})
