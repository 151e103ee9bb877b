/**
 * Two layers of an uncontended Redis lock, as contenders of bench/redis-uncontended.ts and bench/redis-c1-layers.ts:
 * the fenced floor (the least any fenced, owner-checked Redis lock sends) and latchkey's backend driven directly
 * through the backend contract (no core), so that a layer's share of a pair is the difference between two rows.
 */
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { redisBackend } from 'latchkey/redis'
import type { Contender } from './contender.js'

type Scripted = Redis & {
  take(key: string, fence: string, ttl: number): Promise<number>
  give(key: string, token: string): Promise<number>
}

/** INCR a counter and SET NX PX the lock to the token; release: DEL if the lock still holds the token. */
export function fencedFloor(url: string, ns: string): Contender {
  const client = new Redis(url) as Scripted
  client.defineCommand('take', {
    numberOfKeys: 2,
    lua: "local n = redis.call('INCR', KEYS[2]) if redis.call('SET', KEYS[1], n, 'NX', 'PX', ARGV[1]) then return n end return 0",
  })
  client.defineCommand('give', {
    numberOfKeys: 1,
    lua: "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
  })
  return {
    async acquire(key) {
      const k = `${ns}-floor:{${key}}`
      const token = await client.take(k, `${k}:fence`, 10_000)
      return token === 0 ? undefined : { release: () => client.give(k, String(token)) }
    },
    close: async () => void client.disconnect(),
  }
}

/** The request the core builds for an uncontended acquire of the mutex `key` (TTL 10 s, not waiting in line). */
export function uncontendedMutexRequest(key: string) {
  return {
    key,
    kind: 'mutex' as const,
    owner: randomUUID(),
    ttlMs: 10_000,
    permits: 1,
    lockDelayMs: 0,
    queue: false,
    queueTtlMs: 30_000,
  }
}

/** The backend contract's calls alone, as the core makes them for an uncontended acquire (subscribed, first try). */
export function backendOnly(url: string, ns: string): Contender {
  const client = new Redis(url)
  const backend = redisBackend({ client })
  return {
    async acquire(key) {
      const request = uncontendedMutexRequest(`${ns}-backend:${key}`)
      const sub = backend.subscribe?.(request)
      const result = await backend.tryAcquire(request)
      sub?.close()
      return result.acquired ? { release: () => backend.release(request) } : undefined
    },
    close: async () => {
      await backend.close()
      client.disconnect()
    },
  }
}
