import type { Locks } from 'latchkey'
import type { BucketStock, BuyOutcome, Sale, SaleStore } from '../store/types.js'
import type { BucketSellers } from './bucket-sellers.js'
import type { RedisReserve } from './reserve/redis-reserve.js'

export { StaleWriteError } from './bucket-sellers.js'

/** What a strategy needs from the service. */
export interface BuyContext {
  readonly store: SaleStore
  readonly locks: Locks
  /** How long a buyer waits for a stock lock (its line in this process included) before the service answers 503. */
  readonly lockWaitMs: number
  /** Lease length of a stock lock (renewed while held). */
  readonly lockTtlMs: number
  /** One seller per bucket in this process: buyers line up there, the seller holds the lock for a run of them. */
  readonly sellers: BucketSellers
  /** The `reserve` strategy's Redis side; undefined when the service has no Redis. */
  readonly reserve?: RedisReserve | undefined
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
): Promise<{ readonly early?: BuyOutcome; readonly buckets: readonly BucketStock[] }> {
  // One read for both answers (it was two: the order, then the buckets).
  const { orderId, buckets } = await ctx.store.buyerView(sale.id, userId)
  if (orderId !== undefined) return { early: { status: 'duplicate' }, buckets: [] }
  if (buckets.every((b) => b.remain < quantity)) return { early: { status: 'sold-out' }, buckets }
  return { buckets }
}

/**
 * `db-atomic`: no lock at all, the database's row lock does it: one conditional UPDATE decrements the stock only
 * while enough is left (docs/background.md, "A flash sale without a lock").
 */
export async function buyAtomic(ctx: BuyContext, sale: Sale, userId: string, quantity: number): Promise<BuyOutcome> {
  return (await precheck(ctx, sale, userId, quantity)).early ?? ctx.store.buyAtomic(sale.id, userId, quantity)
}

/**
 * Read-check-write of one bucket under its latchkey mutex, by the bucket's seller in this process (see
 * bucket-sellers.ts: one hold serves a run of queued buyers). The read claims the bucket with `lease.token` and
 * every write is fenced by it, so a holder whose lease ran out while it worked cannot oversell: its write is
 * refused once a later holder has touched the bucket. Once the order is committed, a lock release that fails
 * (the backend down, the lease lost) does not throw: withLock reports it as a `release-failed` event, so the
 * buyer hears 201 for an order that is stored, never 503.
 */
export function buyInBucket(
  ctx: BuyContext,
  sale: Sale,
  bucket: number,
  userId: string,
  quantity: number,
): Promise<BuyOutcome> {
  return ctx.sellers.buy(ctx, sale, bucket, userId, quantity)
}

/** `lock`: one latchkey mutex per item around read-check-write (a single bucket). */
export async function buyLocked(ctx: BuyContext, sale: Sale, userId: string, quantity: number): Promise<BuyOutcome> {
  return (await precheck(ctx, sale, userId, quantity)).early ?? buyInBucket(ctx, sale, 0, userId, quantity)
}

/**
 * `sharded`: the stock is split into buckets, each with its own lock; a buyer goes to an open bucket and moves on
 * while buckets are short. The bucket is one this process is already selling when there is one (a buyer more in
 * its seller's hold costs one write; a bucket of its own would cost a lock acquire and release, and with 8 buckets
 * and 2 processes nearly every order took a hold of its own), else a random one, so processes spread over the
 * buckets. An order is never split over buckets, so a buyer of several units can be told "sold out" while a few
 * units remain scattered (the usual price of sharding).
 */
export async function buySharded(ctx: BuyContext, sale: Sale, userId: string, quantity: number): Promise<BuyOutcome> {
  const checked = await precheck(ctx, sale, userId, quantity)
  if (checked.early !== undefined) return checked.early
  let all = checked.buckets
  // Each later round re-reads the buckets, so buckets emptied meanwhile are skipped, not queued for.
  for (let round = 0; round <= sale.buckets; round++) {
    if (round > 0) all = await ctx.store.buckets(sale.id)
    const open = all.filter((b) => b.remain >= quantity).map((b) => b.bucket)
    const next = ctx.sellers.selling(sale.id, open) ?? open[Math.floor(Math.random() * open.length)]
    if (next === undefined) break
    const outcome = await buyInBucket(ctx, sale, next, userId, quantity)
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
