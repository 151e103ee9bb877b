import { describe, expect, it } from 'vitest'
import { serviceForSuite } from './suite-service.js'
import { adminGet, adminPost, post } from './support.js'

const DAY_MS = 24 * 60 * 60 * 1000
const STARTS_AT_RANGE = 'body/startsAt must be between 2000-01-01T00:00:00.000Z and one year from now'

describe('flash-sale HTTP API', () => {
  const app = serviceForSuite()

  const createSale = async (body: Record<string, unknown>): Promise<string> => {
    const res = await adminPost(app(), '/sales', { item: 'phone', stock: 2, strategy: 'lock', ...body })
    expect(res.status).toBe(201)
    return res.body.id as string
  }

  it.each([
    [{ stock: 5, strategy: 'lock' }, "body must have required property 'item'"],
    [{ item: 'phone', strategy: 'lock' }, "body must have required property 'stock'"],
    [{ item: 'phone', stock: 5 }, "body must have required property 'strategy'"],
    [{ item: '', stock: 5, strategy: 'lock' }, 'body/item must NOT have fewer than 1 characters'],
    [{ item: 'phone', stock: 0, strategy: 'lock' }, 'body/stock must be >= 1'],
    [{ item: 'phone', stock: '5', strategy: 'lock' }, 'body/stock must be integer'],
    [{ item: 'phone', stock: 2.5, strategy: 'lock' }, 'body/stock must be integer'],
    [{ item: 'phone', stock: 5, strategy: 'magic' }, 'body/strategy must be equal to one of the allowed values'],
    [{ item: 'phone', stock: 5, strategy: 'lock', colour: 'red' }, 'body must NOT have additional properties'],
    [
      { item: 'phone', stock: 5, strategy: 'lock', startsAt: 'soon' },
      'body/startsAt must be epoch milliseconds or an ISO 8601 date-time',
    ],
    [{ item: 'phone', stock: 5, strategy: 'lock', startsAt: -1 }, 'body/startsAt must be >= 0'],
    // Beyond any real date: accepted, it made every later order of the sale answer 500.
    [{ item: 'phone', stock: 5, strategy: 'lock', startsAt: 1e20 }, STARTS_AT_RANGE],
    [{ item: 'phone', stock: 5, strategy: 'lock', startsAt: '-000001-01-01T00:00:00Z' }, STARTS_AT_RANGE],
    [{ item: 'phone', stock: 5, strategy: 'lock', startsAt: '1999-12-31T23:59:59Z' }, STARTS_AT_RANGE],
    [{ item: 'phone', stock: 5, strategy: 'lock', startsAt: Date.now() + 400 * DAY_MS }, STARTS_AT_RANGE],
    [{ item: 'phone', stock: 5, strategy: 'lock', buckets: 4 }, 'body/buckets applies to the sharded strategy only'],
    [{ item: 'phone', stock: 5, strategy: 'sharded', buckets: 0 }, 'body/buckets must be >= 1'],
  ])('POST /sales %j -> 400 %s', async (body, message) => {
    const res = await adminPost(app(), '/sales', body)
    expect(res.status).toBe(400)
    expect(res.body.message).toContain(message)
  })

  it('POST /sales -> 201 with the stored sale, ISO startsAt accepted', async () => {
    const res = await adminPost(app(), '/sales', {
      item: 'tv',
      stock: 9,
      strategy: 'sharded',
      startsAt: '2020-01-01T00:00:00Z',
    })
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({
      item: 'tv',
      stock: 9,
      strategy: 'sharded',
      buckets: 8,
      startsAt: Date.UTC(2020, 0, 1),
    })
  })

  it('startsAt at the edges of its range (2000-01-01, 364 days ahead) -> 201', async () => {
    for (const startsAt of ['2000-01-01T00:00:00Z', Date.now() + 364 * DAY_MS]) {
      const res = await adminPost(app(), '/sales', { item: 'tv', stock: 1, strategy: 'lock', startsAt })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
    }
  })

  it.each([
    [{ quantity: 1 }, "body must have required property 'userId'"],
    [{ userId: 'u1' }, "body must have required property 'quantity'"],
    [{ userId: '', quantity: 1 }, 'body/userId must NOT have fewer than 1 characters'],
    [{ userId: 'u1', quantity: 0 }, 'body/quantity must be >= 1'],
    [{ userId: 'u1', quantity: 11 }, 'body/quantity must be <= 10'],
    [{ userId: 'u1', quantity: 1.5 }, 'body/quantity must be integer'],
    [{ userId: 7, quantity: 1 }, 'body/userId must be string'],
    [{ userId: 'u1', quantity: 1, coupon: 'x' }, 'body must NOT have additional properties'],
  ])('POST /sales/:id/orders %j -> 400 %s', async (body, message) => {
    const id = await createSale({})
    const res = await post(app(), `/sales/${id}/orders`, body)
    expect(res.status).toBe(400)
    expect(res.body.message).toContain(message)
  })

  it('POST /sales/:id/orders for an unknown sale -> 404', async () => {
    const res = await post(app(), '/sales/nope/orders', { userId: 'u1', quantity: 1 })
    expect(res.status).toBe(404)
    expect(res.body.code).toBe('UNKNOWN_SALE')
  })

  it('before startsAt -> 425 with Retry-After, and nothing sold', async () => {
    const id = await createSale({ startsAt: Date.now() + 60_000 })
    const res = await post(app(), `/sales/${id}/orders`, { userId: 'u1', quantity: 1 })
    expect(res.status).toBe(425)
    expect(res.body.code).toBe('NOT_STARTED')
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(50)
    const sale = await app().inject({ method: 'GET', url: `/sales/${id}` })
    expect(sale.json()).toMatchObject({ remaining: 2, sold: 0, orders: 0 })
  })

  it.each(['db-atomic', 'lock', 'sharded'])(
    '%s: 201, then 409 already ordered, then 409 sold out',
    async (strategy) => {
      const id = await createSale({ strategy, stock: 3, ...(strategy === 'sharded' ? { buckets: 2 } : {}) })
      const first = await post(app(), `/sales/${id}/orders`, { userId: 'alice', quantity: 2 })
      expect(first.status).toBe(201)
      expect(first.body.orderId).toEqual(expect.any(String))
      const again = await post(app(), `/sales/${id}/orders`, { userId: 'alice', quantity: 1 })
      expect(again).toMatchObject({ status: 409, body: { code: 'ALREADY_ORDERED' } })
      // 1 unit left: bob's 2 do not fit (a sharded order never spans buckets), carol's 1 does.
      const bob = await post(app(), `/sales/${id}/orders`, { userId: 'bob', quantity: 2 })
      expect(bob).toMatchObject({ status: 409, body: { code: 'SOLD_OUT' } })
      const carol = await post(app(), `/sales/${id}/orders`, { userId: 'carol', quantity: 1 })
      expect(carol.status).toBe(201)
      const dave = await post(app(), `/sales/${id}/orders`, { userId: 'dave', quantity: 1 })
      expect(dave).toMatchObject({ status: 409, body: { code: 'SOLD_OUT' } })
      const sale = await app().inject({ method: 'GET', url: `/sales/${id}` })
      expect(sale.json()).toMatchObject({ stock: 3, remaining: 0, sold: 3, orders: 2 })
    },
  )

  it('GET /sales lists the latest sales with counters; GET /sales/:id/audit gives the invariant data', async () => {
    const id = await createSale({ item: 'listed', stock: 4 })
    expect((await post(app(), `/sales/${id}/orders`, { userId: 'zoe', quantity: 3 })).status).toBe(201)
    const list = (await app().inject({ method: 'GET', url: '/sales' })).json() as { sales: Array<{ id: string }> }
    expect(list.sales[0]).toMatchObject({ id, item: 'listed', stock: 4, remaining: 1, sold: 3, orders: 1 })
    const audit = (await adminGet(app(), `/sales/${id}/audit`)).body
    expect(audit).toMatchObject({
      initial: 4,
      remaining: 1,
      minRemain: 1,
      sold: 3,
      orders: 1,
      usersWithSeveralOrders: 0,
    })
    expect(audit.orderIds).toHaveLength(1)
    expect((await adminGet(app(), '/sales/nope/audit')).status).toBe(404)
  })

  it('GET /sales/:id for an unknown sale -> 404', async () => {
    const res = await app().inject({ method: 'GET', url: '/sales/nope' })
    expect(res.statusCode).toBe(404)
  })

  it('GET /healthz and GET /metrics (orders, rejections, latency, lock wait, hold and held leases)', async () => {
    expect((await app().inject({ method: 'GET', url: '/healthz' })).json()).toMatchObject({ ok: true })
    const res = await app().inject({ method: 'GET', url: '/metrics' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toContain('text/plain')
    for (const line of [
      'flash_sale_orders_total{strategy="lock"}',
      'flash_sale_rejections_total{strategy="lock",reason="sold_out"}',
      'flash_sale_rejections_total{strategy="lock",reason="not_started"}',
      'flash_sale_order_duration_seconds_bucket',
      // latchkey/prometheus's lock metrics, in the service's registry
      'latchkey_acquire_wait_seconds_count{kind="mutex",backend="memory"}',
      'latchkey_hold_seconds_count{kind="mutex",backend="memory"}',
      'latchkey_acquisitions_total{kind="mutex",backend="memory",reentrant="false"}',
      'latchkey_held_leases{kind="mutex",backend="memory"} 0',
    ]) {
      expect(res.body).toContain(line)
    }
  })
})
