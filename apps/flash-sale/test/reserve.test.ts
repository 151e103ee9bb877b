import { Redis } from 'ioredis'
import { eventually } from 'latchkey/testing'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import type { ReservedSummary } from '../src/server/sale-routes.js'
import { settleReservation } from '../src/strategies/reserve/settle.js'
import {
  adminGet,
  adminPost,
  type Instance,
  post,
  REDIS_URL,
  redisKeys,
  type StoreKind,
  sendBuyers,
  startInstances,
  startingSale,
  type TestReserve,
  tempDir,
} from './support.js'

const BUYERS = 1_000
const STOCK = 100

type Cleanup = () => Promise<void> | void

/** Starts `count` instances with the reserve strategy under a key prefix of the test's own. */
async function reserveInstances(
  cleanups: Cleanup[],
  storeKind: StoreKind,
  count = 2,
  extra: Partial<TestReserve> = {},
) {
  const dir = tempDir()
  cleanups.push(dir.remove)
  const keys = redisKeys()
  cleanups.push(keys.remove)
  const reserve: TestReserve = { url: REDIS_URL, keyPrefix: keys.prefix, claimIdleMs: 1_000, ...extra }
  const started = await startInstances(dir.path, 'memory', count, false, storeKind, reserve)
  cleanups.push(started.close)
  return { ...started, prefix: keys.prefix }
}

/** What `GET /sales/:id` says of a reserve sale. */
type SettledSale = { orders: number; reserved: ReservedSummary }

/** `GET /sales/:id` until the store has settled every reservation (the relays drained the outbox). */
async function settled(app: Instance['app'], id: string): Promise<SettledSale> {
  let sale: SettledSale | undefined
  const read = async (): Promise<boolean> => {
    sale = (await app.inject({ method: 'GET', url: `/sales/${id}` })).json()
    return sale?.reserved.unsettled === 0
  }
  await eventually('the relays settled every reservation', read, 20_000, 25)
  return sale as SettledSale
}

const redis = new Redis(REDIS_URL)
afterAll(async () => {
  await redis.quit()
})

describe.each(['sqlite', 'postgres', 'mysql'] as const)(
  'reserve, %s store: 1,000 concurrent buyers, 2 instances',
  (kind) => {
    const cleanups: Cleanup[] = []
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
    })

    it('reserves exactly the stock in Redis, once per user, and the relays settle every order once', async () => {
      const { instances, prefix } = await reserveInstances(cleanups, kind)
      const [a, b] = instances as [Instance, Instance]
      const id = await startingSale(instances, { item: 'phone', stock: STOCK, strategy: 'reserve' })
      // Every 20th buyer also sends a second order through the other instance, at the same time.
      const answers = await sendBuyers(a, b, id, BUYERS)
      expect(answers.filter((r) => r.status !== 201 && r.status !== 409).map((r) => r.body)).toEqual([])
      const ordered = answers.filter((r) => r.status === 201)
      expect(ordered).toHaveLength(STOCK)
      expect(new Set(ordered.map((r) => r.user)).size).toBe(STOCK)

      const sale = await settled(a.app, id)
      expect(sale.reserved).toEqual({ remaining: 0, sold: STOCK, orders: STOCK, unsettled: 0 })
      const audit = await a.store.audit(id)
      expect(audit).toMatchObject({ initial: STOCK, remaining: 0, minRemain: 0, sold: STOCK, orders: STOCK })
      expect(audit?.usersWithSeveralOrders).toBe(0)
      // The very order ids the buyers were given are the ones stored.
      expect([...(audit?.orderIds ?? [])].sort()).toEqual(ordered.map((r) => r.body.orderId).sort())
      // Every entry was acknowledged and deleted; none was refused.
      expect(await redis.xlen(`{${prefix}}:outbox`)).toBe(0)
      expect(await redis.exists(`{${prefix}}:dead-letters`)).toBe(0)
      const stats = instances.map((i) => i.reserve?.relay.stats)
      expect(stats.reduce((n, s) => n + (s?.settled ?? 0), 0)).toBe(STOCK)
      expect(stats.reduce((n, s) => n + (s?.deadLettered ?? 0) + (s?.failures ?? 0), 0)).toBe(0)
    }, 60_000)
  },
)

describe('reserve through the API (SQLite store, one instance)', () => {
  const cleanups: Cleanup[] = []
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  })

  it('201, 409 already ordered, 409 sold out; GET /sales/:id shows the settled and the Redis view', async () => {
    const { instances } = await reserveInstances(cleanups, 'sqlite', 1)
    const { app } = instances[0] as Instance
    const id = (await adminPost(app, '/sales', { item: 'tv', stock: 3, strategy: 'reserve' })).body.id as string
    expect((await post(app, `/sales/${id}/orders`, { userId: 'alice', quantity: 2 })).status).toBe(201)
    const again = await post(app, `/sales/${id}/orders`, { userId: 'alice', quantity: 1 })
    expect(again).toMatchObject({ status: 409, body: { code: 'ALREADY_ORDERED' } })
    const bob = await post(app, `/sales/${id}/orders`, { userId: 'bob', quantity: 2 })
    expect(bob).toMatchObject({ status: 409, body: { code: 'SOLD_OUT' } })
    expect((await post(app, `/sales/${id}/orders`, { userId: 'carol', quantity: 1 })).status).toBe(201)
    expect((await post(app, `/sales/${id}/orders`, { userId: 'dave', quantity: 1 })).body.code).toBe('SOLD_OUT')
    // Sold out now (and remembered by the service), a buyer with an order still hears that it has one.
    const carol = await post(app, `/sales/${id}/orders`, { userId: 'carol', quantity: 1 })
    expect(carol).toMatchObject({ status: 409, body: { code: 'ALREADY_ORDERED' } })
    expect(await settled(app, id)).toMatchObject({
      stock: 3,
      remaining: 0,
      sold: 3,
      orders: 2,
      reserved: { remaining: 0, sold: 3, orders: 2, unsettled: 0 },
    })
    const audit = (await adminGet(app, `/sales/${id}/audit`)).body
    expect(audit).toMatchObject({ sold: 3, orders: 2, reserved: { sold: 3, orders: 2, unsettled: 0 } })
  })

  it('a service without Redis refuses to create a reserve sale (400, saying why)', async () => {
    const dir = tempDir()
    cleanups.push(dir.remove)
    const { instances, close } = await startInstances(dir.path, 'memory', 1)
    cleanups.push(close)
    const res = await adminPost((instances[0] as Instance).app, '/sales', { item: 'tv', stock: 3, strategy: 'reserve' })
    expect(res.status).toBe(400)
    expect(res.body.message).toContain('reserve needs a service started with Redis')
  })
})

describe('the outbox relay (SQLite store)', () => {
  const cleanups: Cleanup[] = []
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  })
  let outbox: string
  let instance: Instance
  let saleId: string

  const setup = async (): Promise<void> => {
    const started = await reserveInstances(cleanups, 'sqlite', 1, { claimIdleMs: 300 })
    instance = started.instances[0] as Instance
    outbox = `{${started.prefix}}:outbox`
    saleId = (await adminPost(instance.app, '/sales', { item: 'tv', stock: 5, strategy: 'reserve' })).body.id as string
  }

  it('takes over an entry a dead relay had read but not acknowledged, and writes it once', async () => {
    await setup()
    // A relay that reads an entry and dies: a consumer of the same group that never acknowledges.
    await instance.reserve?.relay.close()
    const reply = await post(instance.app, `/sales/${saleId}/orders`, { userId: 'alice', quantity: 1 })
    expect(reply.status).toBe(201)
    const read = (await redis.xreadgroup(
      'GROUP',
      'settlers',
      'dead-relay',
      'COUNT',
      10,
      'STREAMS',
      outbox,
      '>',
    )) as Array<[string, unknown[]]> | null
    expect(read?.[0]?.[1]).toHaveLength(1)
    expect(await instance.store.audit(saleId)).toMatchObject({ orders: 0, remaining: 5 })
    // A live relay (a restarted process: a new consumer) claims it once it has been idle 300 ms.
    const { OutboxRelay } = await import('../src/strategies/reserve/outbox-relay.js')
    const client = new Redis(REDIS_URL)
    const relay = new OutboxRelay(
      instance.store,
      client,
      new Redis(REDIS_URL),
      instance.reserve?.reserve.keys as never,
      { claimIdleMs: 300 },
    )
    cleanups.push(async () => {
      await relay.close()
      await client.quit()
    })
    relay.start()
    await expect.poll(() => relay.stats.settled, { timeout: 5_000 }).toBe(1)
    expect(relay.stats.claimed).toBe(1)
    const audit = await instance.store.audit(saleId)
    expect(audit).toMatchObject({ orders: 1, sold: 1, remaining: 4 })
    expect([...(audit?.orderIds ?? [])]).toEqual([reply.body.orderId])
    expect(await redis.xpending(outbox, 'settlers')).toEqual([0, null, null, null])
  })

  it('settles a redelivered reservation once: the retry finds its order written (crash between commit and ack)', async () => {
    await setup()
    const { store } = instance
    const r = { orderId: 'order-1', saleId, userId: 'zoe', quantity: 2, createdAt: Date.now() }
    expect(await settleReservation(store, r)).toBe('settled')
    expect(await settleReservation(store, r)).toBe('already')
    // Two relays settling the same entry at once (a claim racing a slow relay): one writes, one finds it.
    const twin = { ...r, orderId: 'order-2', userId: 'yan' }
    const both = await Promise.all([settleReservation(store, twin), settleReservation(store, twin)])
    expect(both.sort()).toEqual(['already', 'settled'])
    expect(await store.audit(saleId)).toMatchObject({ orders: 2, sold: 4, remaining: 1, usersWithSeveralOrders: 0 })
    // Redis and the store disagreeing (Redis lost data) is reported, never written.
    expect(await settleReservation(store, { ...r, orderId: 'order-3' })).toBe('conflict')
    expect(await settleReservation(store, { ...r, orderId: 'order-4', userId: 'xia' })).toBe('short')
    expect(await store.audit(saleId)).toMatchObject({ orders: 2, sold: 4, remaining: 1 })
  })

  it('moves entries the store refuses to the dead letters, and keeps settling the others', async () => {
    await setup()
    await redis.xadd(outbox, '*', 'order', 'x1', 'sale', saleId) // malformed
    await redis.xadd(outbox, '*', 'order', 'x2', 'sale', 'no-such-sale', 'user', 'u', 'quantity', '1', 'at', '0')
    const reply = await post(instance.app, `/sales/${saleId}/orders`, { userId: 'alice', quantity: 1 })
    expect(reply.status).toBe(201)
    const relay = instance.reserve?.relay
    await expect.poll(() => relay?.stats.settled, { timeout: 5_000 }).toBe(1)
    expect(relay?.stats.deadLettered).toBe(2)
    const dead = (await redis.xrange(outbox.replace('outbox', 'dead-letters'), '-', '+')).map(([, f]) => f[3])
    expect(dead).toEqual(['malformed', 'short'])
    expect(await redis.xlen(outbox)).toBe(0)
  })

  it('creates its consumer group again when it is gone (a Redis restarted without persistence)', async () => {
    await setup()
    await redis.del(outbox)
    const reply = await post(instance.app, `/sales/${saleId}/orders`, { userId: 'alice', quantity: 1 })
    expect(reply.status).toBe(201)
    const relay = instance.reserve?.relay
    await expect.poll(() => relay?.stats.settled, { timeout: 10_000 }).toBe(1)
    expect(relay?.stats.failures).toBeGreaterThanOrEqual(1)
    expect([...((await instance.store.audit(saleId))?.orderIds ?? [])]).toEqual([reply.body.orderId])
  })
})
