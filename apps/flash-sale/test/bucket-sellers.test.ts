import { join } from 'node:path'
import { createLocks, isLockError, type LockEvent, type Locks, LockTimeoutError } from 'latchkey'
import { memoryBackend } from 'latchkey/memory'
import { afterEach, describe, expect, it } from 'vitest'
import { sqliteStore } from '../src/store/sqlite-store.js'
import type { BuyOutcome, Sale, SaleStore } from '../src/store/types.js'
import { BucketSellers, HOLD_MAX } from '../src/strategies/bucket-sellers.js'
import type { BuyContext } from '../src/strategies/buy.js'
import { tempDir } from './support.js'

/**
 * A lock that always grants at once, with a token 10 above the last one per hold (room for a token of another
 * holder in between); `lose()` aborts the current hold's lease signal, as latchkey does when a lease is lost.
 */
function countingLocks(): { locks: Locks; tokens: bigint[]; lose: () => void } {
  const tokens: bigint[] = []
  let lost = new AbortController()
  const locks = {
    mutex: () => ({
      withLock: (fn: (lease: { token: bigint; signal: AbortSignal }) => Promise<unknown>) => {
        const token = 100n + 10n * BigInt(tokens.length)
        tokens.push(token)
        lost = new AbortController()
        return fn({ token, signal: lost.signal })
      },
    }),
  } as unknown as Locks
  return { locks, tokens, lose: () => lost.abort() }
}

/** `store` with `after(n, args)` run after its n-th sellRun (1-based), before the seller hears the result. */
function afterRuns(store: SaleStore, after: (n: number, args: unknown[]) => Promise<void> | void): SaleStore {
  let commits = 0
  return new Proxy(store, {
    get(target, key) {
      const value = Reflect.get(target, key, target) as unknown
      if (typeof value !== 'function') return value
      const method = value.bind(target) as (...args: unknown[]) => Promise<unknown>
      if (key !== 'sellRun') return method
      return async (...args: unknown[]) => {
        const result = await method(...args)
        await after(++commits, args)
        return result
      }
    },
  })
}

describe('bucket sellers: one lock hold serves a run of the buyers lined up in this process', () => {
  const cleanups: Array<() => Promise<void> | void> = []
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  })

  const setup = async (stock: number, locks: Locks, wrap: (s: SaleStore) => SaleStore = (s) => s) => {
    const dir = tempDir()
    const real = sqliteStore(join(dir.path, 'store.db'))
    cleanups.push(dir.remove, () => real.close())
    const store = wrap(real)
    const sale = await store.createSale({ item: 'x', stock, startsAt: 0, strategy: 'lock', buckets: 1 })
    const ctx: BuyContext = { store, locks, lockWaitMs: 1_000, lockTtlMs: 1_000, sellers: new BucketSellers() }
    const buy = (users: number, from = 0): Promise<BuyOutcome[]> =>
      Promise.all(Array.from({ length: users }, (_, i) => ctx.sellers.buy(ctx, sale, 0, `u${from + i}`, 1)))
    return { real, sale, ctx, buy }
  }

  it('takes the lock once per HOLD_MAX buyers, and sells each unit once', async () => {
    const { locks, tokens } = countingLocks()
    const { real, sale, ctx, buy } = await setup(100, locks)
    const outcomes = await buy(HOLD_MAX + 10)
    expect(outcomes.every((o) => o.status === 'ordered')).toBe(true)
    // One hold per HOLD_MAX buyers in line (per buyer before).
    expect(tokens).toHaveLength(2)
    expect(ctx.sellers.size).toBe(0)
    expect(await real.audit(sale.id)).toMatchObject({ sold: HOLD_MAX + 10, remaining: 100 - HOLD_MAX - 10 })
  })

  it('answers sold-out to the buyers in line once the units are gone, without another hold', async () => {
    const { locks, tokens } = countingLocks()
    const { real, sale, buy } = await setup(5, locks)
    const outcomes = await buy(20)
    expect(outcomes.filter((o) => o.status === 'ordered')).toHaveLength(5)
    expect(outcomes.slice(5).every((o) => o.status === 'sold-out')).toBe(true)
    expect(tokens).toHaveLength(1)
    expect(await real.audit(sale.id)).toMatchObject({ sold: 5, remaining: 0, orders: 5 })
  })

  it('a writer with a higher token between two runs of a hold ends it; the next hold reads the stock again', async () => {
    // Another process's seller (a lease of ours lost unnoticed) claims the bucket with a higher token and sells
    // one unit after our first run, while 5 more buyers line up: the stock our hold knows is one too high.
    const { locks, tokens } = countingLocks()
    const late: Array<Promise<BuyOutcome>> = []
    let more: () => void = () => undefined
    const sneak = (store: SaleStore) =>
      afterRuns(store, async (n, [saleId]) => {
        if (n !== 1) return
        const token = (tokens.at(-1) as bigint) + 1n
        const remain = (await store.claimBucket(saleId as string, 0, token)) as number
        await store.commitFenced(saleId as string, 0, remain - 1, token, 'other-process', 1)
        more()
      })
    const { real, sale, ctx, buy } = await setup(20, locks, sneak)
    more = () => {
      for (let i = 5; i < 10; i++) late.push(ctx.sellers.buy(ctx, sale, 0, `u${i}`, 1))
    }
    const outcomes = [...(await buy(5)), ...(await Promise.all(late))]
    // Our second run was refused by the fence (stale) and wrote nothing: the hold ended there, and the next one
    // claimed and read the stock again before selling the rest.
    expect(outcomes).toHaveLength(10)
    expect(outcomes.every((o) => o.status === 'ordered')).toBe(true)
    expect(tokens).toHaveLength(2)
    expect(await real.audit(sale.id)).toMatchObject({ sold: 11, remaining: 9, orders: 11 })
  })

  it('a lease lost in a hold ends it before the next run; the next hold sells the rest', async () => {
    const { locks, tokens, lose } = countingLocks()
    const late: Array<Promise<BuyOutcome>> = []
    let more: () => void = () => undefined
    const { real, sale, ctx, buy } = await setup(50, locks, (store) =>
      afterRuns(store, (n) => {
        if (n !== 1) return
        lose()
        more()
      }),
    )
    more = () => {
      for (let i = 5; i < 10; i++) late.push(ctx.sellers.buy(ctx, sale, 0, `u${i}`, 1))
    }
    const outcomes = [...(await buy(5)), ...(await Promise.all(late))]
    expect(outcomes.every((o) => o.status === 'ordered')).toBe(true)
    expect(tokens).toHaveLength(2)
    expect(await real.audit(sale.id)).toMatchObject({ sold: 10, remaining: 40, orders: 10 })
  })

  it('buyers whose requests arrive in one turn of the event loop share one hold', async () => {
    // As HTTP requests do: each buyer in a callback of its own. With the seller started at once, the first
    // buyer's hold (a memory lock: no I/O) was over before the second buyer's callback ran: a hold per buyer.
    const backend = memoryBackend()
    const acquired: LockEvent[] = []
    const locks = createLocks({ backend, onEvent: (e) => void (e.type === 'acquired' && acquired.push(e)) })
    cleanups.push(
      () => backend.close(),
      () => locks.close(),
    )
    const { real, sale, ctx } = await setup(100, locks)
    const outcomes = await Promise.all(
      Array.from(
        { length: 10 },
        (_, i) =>
          new Promise<BuyOutcome>((resolve, reject) =>
            setImmediate(() => ctx.sellers.buy(ctx, sale, 0, `u${i}`, 1).then(resolve, reject)),
          ),
      ),
    )
    expect(outcomes.every((o) => o.status === 'ordered')).toBe(true)
    expect(acquired).toHaveLength(1)
    expect(await real.audit(sale.id)).toMatchObject({ sold: 10, remaining: 90, orders: 10 })
  })

  it('buyers whose wait ran out are refused with the lock error; the line empties', async () => {
    const locks = {
      mutex: (name: string) => ({
        withLock: async () => {
          throw new LockTimeoutError(name, 1_000)
        },
      }),
    } as unknown as Locks
    const { ctx, sale } = await setup(5, locks)
    const settled = await Promise.allSettled(
      Array.from({ length: 5 }, (_, i) => ctx.sellers.buy(ctx, sale as Sale, 0, `u${i}`, 1)),
    )
    expect(settled.every((s) => s.status === 'rejected' && isLockError(s.reason))).toBe(true)
    expect(ctx.sellers.size).toBe(0)
  })
})
