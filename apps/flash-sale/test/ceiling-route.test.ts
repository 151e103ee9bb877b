import { join } from 'node:path'
import { createLocks } from 'latchkey'
import { memoryBackend } from 'latchkey/memory'
import { afterEach, describe, expect, it } from 'vitest'
import { buildApp } from '../src/server/app.js'
import { orderPath } from '../src/server/ceiling-route.js'
import { createMetrics } from '../src/server/metrics.js'
import { sqliteStore } from '../src/store/sqlite-store.js'
import { post, tempDir } from './support.js'

describe('the ceiling probe (a measuring aid of the benchmark)', () => {
  const cleanups: Array<() => Promise<void> | void> = []
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  })

  const app = (ceilingProbe?: boolean) => {
    const dir = tempDir()
    const store = sqliteStore(join(dir.path, 'store.db'))
    const backend = memoryBackend()
    const locks = createLocks({ backend })
    const built = buildApp({
      store,
      locks,
      metrics: createMetrics(),
      ...(ceilingProbe === undefined ? {} : { ceilingProbe }),
    })
    cleanups.push(
      dir.remove,
      () => store.close(),
      () => backend.close(),
      () => locks.close(),
      () => built.close(),
    )
    return built
  }

  it('is off by default: a service serves no probe', async () => {
    const res = await post(app(), orderPath('s1', 'ceiling'), { userId: 'u1', quantity: 1 })
    expect(res.status).toBe(404)
    expect(res.body.code).not.toBe('SOLD_OUT')
  })

  it('answers 409 SOLD_OUT from memory, for any sale id, selling nothing', async () => {
    const res = await post(app(true), orderPath('no-such-sale', 'ceiling'), { userId: 'u1', quantity: 1 })
    expect(res.status).toBe(409)
    expect(res.body).toEqual({
      statusCode: 409,
      code: 'SOLD_OUT',
      error: 'Conflict',
      message: 'Sale no-such-sale is sold out',
    })
  })

  it('validates the body as the order route does', async () => {
    const res = await post(app(true), orderPath('s1', 'ceiling'), { userId: 'u1', quantity: 11 })
    expect(res.status).toBe(400)
    expect(res.body.message).toContain('body/quantity must be <= 10')
  })

  it('orderPath names the order route, or the probe under its prefix', () => {
    expect(orderPath('s1')).toBe('/sales/s1/orders')
    expect(orderPath('s1', 'ceiling')).toBe('/probe/ceiling/sales/s1/orders')
  })
})
