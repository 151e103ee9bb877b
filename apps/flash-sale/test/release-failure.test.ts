import { join } from 'node:path'
import { Redis } from 'ioredis'
import { createLocks, type LockEvent } from 'latchkey'
import { redisBackend } from 'latchkey/redis'
import { eventually } from 'latchkey/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../src/server/app.js'
import { createMetrics } from '../src/server/metrics.js'
import { sqliteStore } from '../src/store/sqlite-store.js'
import type { SaleStore } from '../src/store/types.js'
import { type RedisServerProcess, startRedisServer } from './redis-server.js'
import { ADMIN_TOKEN, adminPost, post, tempDir } from './support.js'

/**
 * A store whose `sellRun` stops Redis once the order row is committed and before returning: the lock
 * around it is then released against a dead server. The buyer's order is stored; its answer must say so.
 */
function stopRedisAfterCommit(store: SaleStore, redis: RedisServerProcess): SaleStore {
  return new Proxy(store, {
    get(target, key) {
      const value = Reflect.get(target, key, target) as unknown
      if (typeof value !== 'function') return value
      const method = value.bind(target) as (...args: unknown[]) => Promise<unknown>
      if (key !== 'sellRun') return method
      return async (...args: unknown[]) => {
        const outcome = await method(...args)
        await redis.stop()
        return outcome
      }
    },
  })
}

describe('lock strategy on Redis locks: Redis dies between the order commit and the lock release', () => {
  const dir = tempDir()
  const events: LockEvent[] = []
  let redis: RedisServerProcess
  let client: Redis
  let store: SaleStore
  let app: ReturnType<typeof buildApp>
  let close: () => Promise<void>

  beforeAll(async () => {
    redis = await startRedisServer()
    // No reconnect attempts while the server is down, and a short command deadline, so the release fails soon.
    client = new Redis(redis.url, { maxRetriesPerRequest: 0, lazyConnect: true })
    await client.connect()
    const backend = redisBackend({ client, commandTimeoutMs: 300 })
    store = sqliteStore(join(dir.path, 'store.db'))
    const locks = createLocks({ backend, namespace: 'test', onEvent: (event) => events.push(event) })
    app = buildApp({
      store: stopRedisAfterCommit(store, redis),
      locks,
      metrics: createMetrics(),
      adminToken: ADMIN_TOKEN,
    })
    await app.ready()
    close = async () => {
      await app.close()
      await redis.start()
      await locks.close()
      await backend.close()
      await client.quit()
      await store.close()
    }
  })
  afterAll(async () => {
    await close?.()
    await redis?.dispose()
    dir.remove()
  })

  it('the buyer gets 201 and the order is stored exactly once', async () => {
    const id = (await adminPost(app, '/sales', { item: 'phone', stock: 5, strategy: 'lock' })).body.id as string
    const answer = await post(app, `/sales/${id}/orders`, { userId: 'alice', quantity: 1 })
    // The scenario really happened: the release reached a dead Redis and failed. The buyer is answered inside the
    // hold, before the release, so the failure may be reported after the answer.
    await eventually('the release failed', () => events.some((e) => e.type === 'release-failed'))
    expect(answer.status, JSON.stringify(answer.body)).toBe(201)
    const audit = await store.audit(id)
    expect(audit).toMatchObject({ sold: 1, orders: 1, remaining: 4, usersWithSeveralOrders: 0 })
    expect([...(audit?.orderIds ?? [])]).toEqual([answer.body.orderId])
  })
})
