import { join } from 'node:path'
import type { Locks } from 'latchkey'
import { afterEach, describe, expect, it } from 'vitest'
import { sqliteStore } from '../src/store/sqlite-store.js'
import type { SaleStore } from '../src/store/types.js'
import { BucketSellers } from '../src/strategies/bucket-sellers.js'
import { buyInBucket, StaleWriteError } from '../src/strategies/buy.js'
import { type Instance, jitterStore, sendBuyers, startInstances, startingSale, tempDir, testStores } from './support.js'

const BUYERS = 1_000
const STOCK = 100

describe.each([
  ['memory', 'sqlite'],
  ['sqlite', 'sqlite'],
  ['sqlite', 'postgres'],
  ['sqlite', 'mysql'],
] as const)('%s locks, %s store: 1,000 concurrent buyers, 2 service instances', (backend, storeKind) => {
  const cleanups: Array<() => Promise<void> | void> = []
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  })

  it.each(['db-atomic', 'lock', 'sharded'])('%s sells exactly the stock, once per user', async (strategy) => {
    const dir = tempDir()
    cleanups.push(dir.remove)
    const { instances, close } = await startInstances(dir.path, backend, 2, true, storeKind)
    cleanups.push(close)
    const [a, b] = instances as [Instance, Instance]
    const id = await startingSale(instances, { item: 'phone', stock: STOCK, strategy })
    // Every 20th buyer also sends a second order through the other instance, at the same time.
    const answers = await sendBuyers(a, b, id, BUYERS)
    const statuses = answers.map((r) => r.status)
    expect(statuses.filter((s) => s !== 201 && s !== 409)).toEqual([])
    const ordered = answers.filter((r) => r.status === 201)
    expect(ordered).toHaveLength(STOCK)
    expect(new Set(ordered.map((r) => r.user)).size).toBe(STOCK)
    const audit = await a.store.audit(id)
    expect(audit).toBeDefined()
    if (audit === undefined) return
    expect(audit.sold + audit.remaining).toBe(STOCK)
    expect(audit.remaining).toBe(0)
    expect(audit.minRemain).toBeGreaterThanOrEqual(0)
    expect(audit.orders).toBe(STOCK)
    expect(audit.usersWithSeveralOrders).toBe(0)
    expect([...audit.orderIds].sort()).toEqual(ordered.map((r) => r.body.orderId).sort())
  })
})

describe.each(['sqlite', 'postgres', 'mysql'] as const)('fenced stock writes (%s store)', (kind) => {
  const withStore = async (fn: (store: SaleStore) => Promise<void>): Promise<void> => {
    const dir = tempDir()
    const stores = testStores(kind, dir.path)
    const store = await stores.open()
    try {
      await fn(store)
    } finally {
      await store.close()
      await stores.drop()
      dir.remove()
    }
  }

  it('a holder overtaken after its read cannot write what it read', () =>
    withStore(async (store) => {
      const sale = await store.createSale({ item: 'x', stock: 5, startsAt: 0, strategy: 'lock', buckets: 1 })
      // A reads 5 under token 7, then stalls (GC pause, lost lease); B gets the lock with token 8.
      expect(await store.claimBucket(sale.id, 0, 7n)).toBe(5)
      expect(await store.claimBucket(sale.id, 0, 8n)).toBe(5)
      // A wakes up first and writes 4: refused, B's claim fenced it off.
      expect(await store.commitFenced(sale.id, 0, 4, 7n, 'alice', 1)).toEqual({ status: 'stale' })
      expect(await store.commitFenced(sale.id, 0, 4, 8n, 'bob', 1)).toMatchObject({ status: 'ordered' })
      // A later read with A's old token is refused too.
      expect(await store.claimBucket(sale.id, 0, 7n)).toBeUndefined()
      expect(await store.audit(sale.id)).toMatchObject({ remaining: 4, sold: 1, orders: 1 })
    }))

  it('a second order of the same user rolls the stock write back', () =>
    withStore(async (store) => {
      const sale = await store.createSale({ item: 'x', stock: 5, startsAt: 0, strategy: 'lock', buckets: 1 })
      expect(await store.commitFenced(sale.id, 0, 4, 1n, 'alice', 1)).toMatchObject({ status: 'ordered' })
      expect(await store.commitFenced(sale.id, 0, 3, 2n, 'alice', 1)).toEqual({ status: 'duplicate' })
      expect(await store.buyAtomic(sale.id, 'alice', 1)).toEqual({ status: 'duplicate' })
      expect(await store.audit(sale.id)).toMatchObject({ remaining: 4, sold: 1, orders: 1 })
    }))

  it("a buyer's view: the user's order id and every bucket, in one read", () =>
    withStore(async (store) => {
      const sale = await store.createSale({ item: 'x', stock: 5, startsAt: 0, strategy: 'sharded', buckets: 2 })
      const ordered = await store.sellRun(sale.id, 1, 1n, undefined, [{ userId: 'alice', quantity: 1 }])
      const [outcome] = ordered.outcomes
      expect(outcome?.status).toBe('ordered')
      const alice = await store.buyerView(sale.id, 'alice')
      expect(alice.orderId).toBe(outcome?.status === 'ordered' ? outcome.orderId : 'none')
      expect(alice.buckets).toEqual([
        { bucket: 0, remain: 3 },
        { bucket: 1, remain: 1 },
      ])
      expect(await store.buyerView(sale.id, 'bob')).toEqual({ orderId: undefined, buckets: alice.buckets })
    }))

  it('a run sells from the stock it claims: short buyers sold out, a second order of a user refused', () =>
    withStore(async (store) => {
      const sale = await store.createSale({ item: 'x', stock: 4, startsAt: 0, strategy: 'lock', buckets: 1 })
      const buyers = [
        { userId: 'alice', quantity: 1 },
        { userId: 'bob', quantity: 2 },
        { userId: 'alice', quantity: 1 },
        { userId: 'carol', quantity: 3 },
        { userId: 'dave', quantity: 1 },
      ]
      const { outcomes, remain } = await store.sellRun(sale.id, 0, 5n, undefined, buyers)
      expect(outcomes.map((o) => o.status)).toEqual(['ordered', 'ordered', 'duplicate', 'sold-out', 'ordered'])
      expect(remain).toBe(0)
      const audit = await store.audit(sale.id)
      expect(audit).toMatchObject({ remaining: 0, sold: 4, orders: 3 })
      const ids = outcomes.flatMap((o) => (o.status === 'ordered' ? [o.orderId] : []))
      expect([...(audit?.orderIds ?? [])].sort()).toEqual(ids.sort())
    }))

  it('a run under a token overtaken since its claim writes nothing', () =>
    withStore(async (store) => {
      const sale = await store.createSale({ item: 'x', stock: 5, startsAt: 0, strategy: 'lock', buckets: 1 })
      expect(await store.claimBucket(sale.id, 0, 7n)).toBe(5)
      expect(await store.claimBucket(sale.id, 0, 8n)).toBe(5)
      const buyers = [
        { userId: 'alice', quantity: 1 },
        { userId: 'bob', quantity: 1 },
      ]
      // With the stock it knows from its claim, and claiming again: refused both ways.
      expect(await store.sellRun(sale.id, 0, 7n, 5, buyers)).toEqual({
        outcomes: [{ status: 'stale' }],
        remain: undefined,
      })
      expect(await store.sellRun(sale.id, 0, 7n, undefined, buyers)).toEqual({
        outcomes: [{ status: 'stale' }],
        remain: undefined,
      })
      expect(await store.audit(sale.id)).toMatchObject({ remaining: 5, sold: 0, orders: 0 })
      expect((await store.sellRun(sale.id, 0, 8n, 5, buyers)).outcomes.map((o) => o.status)).toEqual([
        'ordered',
        'ordered',
      ])
      expect(await store.audit(sale.id)).toMatchObject({ remaining: 3, sold: 2, orders: 2 })
    }))
})

describe('fencing alone, under a lock that fails to exclude', () => {
  it('never oversells: overlapping holders are fenced off (stale) instead of writing', async () => {
    const dir = tempDir()
    const real = sqliteStore(join(dir.path, 'store.db'))
    // Runs the fence refused (a buyer of one is retried in a later hold, and told 503 after the third refusal).
    let refused = 0
    const counted = new Proxy(real, {
      get(target, key) {
        const value = Reflect.get(target, key, target) as unknown
        if (typeof value !== 'function') return value
        const method = value.bind(target) as SaleStore['sellRun']
        if (key !== 'sellRun') return method
        return async (...args: Parameters<SaleStore['sellRun']>) => {
          const result = await method(...args)
          if (result.outcomes.some((o) => o.status === 'stale')) refused++
          return result
        }
      },
    })
    const store = jitterStore(counted)
    try {
      const sale = await store.createSale({ item: 'x', stock: 20, startsAt: 0, strategy: 'lock', buckets: 1 })
      // Every caller "holds" the lock at once, as when leases expire under a stalled holder, but each
      // gets a higher token, as latchkey's backends guarantee.
      let token = 0n
      const locks = {
        mutex: () => ({
          withLock: (fn: (lease: { token: bigint; signal: AbortSignal }) => unknown) =>
            fn({ token: ++token, signal: new AbortController().signal }),
        }),
      } as unknown as Locks
      // Each buyer has a seller of its own, as if each were in a process of its own: all write at once.
      const ctx = () => ({ store, locks, lockWaitMs: 1_000, lockTtlMs: 1_000, sellers: new BucketSellers() })
      const outcomes = await Promise.allSettled(
        Array.from({ length: 200 }, (_, i) => buyInBucket(ctx(), sale, 0, `u${i}`, 1)),
      )
      const ordered = outcomes.filter((o) => o.status === 'fulfilled' && o.value.status === 'ordered')
      const failed = outcomes.filter((o) => o.status === 'rejected' && !(o.reason instanceof StaleWriteError))
      expect(failed).toEqual([])
      expect(ordered.length).toBeLessThanOrEqual(20)
      expect(refused).toBeGreaterThan(0)
      const audit = await store.audit(sale.id)
      expect(audit?.sold).toBe(ordered.length)
      expect((audit?.sold ?? -1) + (audit?.remaining ?? -1)).toBe(20)
    } finally {
      await real.close()
      dir.remove()
    }
  })
})
