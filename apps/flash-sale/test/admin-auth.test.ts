import { createLocks } from 'latchkey'
import { memoryBackend } from 'latchkey/memory'
import { describe, expect, it } from 'vitest'
import { buildApp } from '../src/server/app.js'
import { createMetrics } from '../src/server/metrics.js'
import { sqliteStore } from '../src/store/sqlite-store.js'
import { serviceForSuite } from './suite-service.js'
import { ADMIN_TOKEN, adminPost, post, tempDir } from './support.js'

const SALE = { item: 'phone', stock: 2, strategy: 'lock' }

describe('admin token: POST /sales and GET /sales/:id/audit need it, buyers do not', () => {
  const app = serviceForSuite()

  const sales = async (): Promise<number> =>
    ((await app().inject({ method: 'GET', url: '/sales' })).json() as { sales: unknown[] }).sales.length

  it.each([
    ['no Authorization', 401, 'UNAUTHORIZED', undefined],
    ['another scheme', 401, 'UNAUTHORIZED', `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}`],
    ['an empty bearer', 401, 'UNAUTHORIZED', 'Bearer '],
    ['a wrong token', 403, 'FORBIDDEN', 'Bearer wrong-token-of-some-length'],
    ['the token with one character more', 403, 'FORBIDDEN', `Bearer ${ADMIN_TOKEN}x`],
  ])('POST /sales with %s -> %i %s, nothing created', async (_what, status, code, authorization) => {
    const before = await sales()
    const res = await app().inject({
      method: 'POST',
      url: '/sales',
      payload: SALE,
      headers: authorization === undefined ? {} : { authorization },
    })
    expect(res.statusCode).toBe(status)
    expect(res.json()).toMatchObject({ code })
    if (status === 401) expect(res.headers['www-authenticate']).toContain('Bearer')
    // Checked before the body: a stranger's invalid body is not validated for them either.
    expect(await sales()).toBe(before)
  })

  it('GET /sales/:id/audit (it lists every order id): 401 without the token, 403 with a wrong one', async () => {
    const id = (await adminPost(app(), '/sales', SALE)).body.id as string
    expect((await post(app(), `/sales/${id}/orders`, { userId: 'u1', quantity: 1 })).status).toBe(201)
    const audit = (authorization?: string) =>
      app().inject({
        method: 'GET',
        url: `/sales/${id}/audit`,
        headers: authorization === undefined ? {} : { authorization },
      })
    expect((await audit()).statusCode).toBe(401)
    expect((await audit('Bearer wrong-token-of-some-length')).statusCode).toBe(403)
    expect((await audit()).json()).not.toHaveProperty('orderIds')
    const ok = await audit(`Bearer ${ADMIN_TOKEN}`)
    expect(ok.statusCode).toBe(200)
    expect(ok.json().orderIds).toHaveLength(1)
  })

  it("buyers' routes need no token: orders, the sale, the list, health, metrics, the dashboard", async () => {
    const id = (await adminPost(app(), '/sales', SALE)).body.id as string
    expect((await post(app(), `/sales/${id}/orders`, { userId: 'u1', quantity: 1 })).status).toBe(201)
    for (const url of [`/sales/${id}`, '/sales', '/healthz', '/metrics', '/dashboard']) {
      expect((await app().inject({ method: 'GET', url })).statusCode, url).toBe(200)
    }
  })
})

describe('admin token: configuration', () => {
  it('without a token the admin routes are refused (403 ADMIN_DISABLED), never open', async () => {
    const backend = memoryBackend()
    const locks = createLocks({ backend })
    const dir = tempDir()
    const store = sqliteStore(`${dir.path}/store.db`)
    const app = buildApp({ store, locks, metrics: createMetrics() })
    try {
      for (const authorization of [undefined, 'Bearer anything-at-all-here']) {
        const headers = authorization === undefined ? {} : { authorization }
        const create = await app.inject({ method: 'POST', url: '/sales', payload: SALE, headers })
        expect(create.statusCode).toBe(403)
        expect(create.json()).toMatchObject({
          code: 'ADMIN_DISABLED',
          message: expect.stringContaining('FLASH_SALE_ADMIN_TOKEN'),
        })
        expect((await app.inject({ method: 'GET', url: '/sales/x/audit', headers })).statusCode).toBe(403)
      }
    } finally {
      await app.close()
      await locks.close()
      await backend.close()
      await store.close()
      dir.remove()
    }
  })

  it('a short token is refused with a RangeError that gives its length, not the token', async () => {
    const backend = memoryBackend()
    const locks = createLocks({ backend })
    try {
      const build = () => buildApp({ store: {} as never, locks, metrics: createMetrics(), adminToken: 'short secret' })
      expect(build).toThrow(RangeError)
      expect(build).toThrow('adminToken must be at least 16 characters without spaces, received 12 characters')
      expect(() => build()).not.toThrow(/short secret/)
    } finally {
      await locks.close()
      await backend.close()
    }
  })
})
