/**
 * Many distinct lock names taken once and released, as a lock per order does, and what they leave in Redis:
 * shared by the idle-memory test and bench/redis-idle-names.ts.
 */
import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import type { Backend } from '../../src/backend/types.js'

/** Acquires and releases `count` names `<prefix><i>` through `backend`, `concurrency` at a time (pipelined). */
export async function churnNames(backend: Backend, prefix: string, count: number, concurrency = 256): Promise<void> {
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < count) {
      const key = `${prefix}${next++}`
      const request = { key, kind: 'mutex' as const, owner: randomUUID(), ttlMs: 30_000, permits: 1 }
      const result = await backend.tryAcquire({ ...request, lockDelayMs: 0, queue: false, queueTtlMs: 0 })
      if (!result.acquired) throw new Error(`lock ${key} was not free`)
      if (!(await backend.release(request))) throw new Error(`lock ${key} was not released`)
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker))
}

/** How many keys match one of `patterns` (SCAN, which also drops the expired keys it meets). */
export async function countKeys(client: Redis, patterns: readonly string[]): Promise<number> {
  let total = 0
  for (const pattern of patterns) {
    let cursor = '0'
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 10_000)
      cursor = next
      total += keys.length
    } while (cursor !== '0')
  }
  return total
}

/** `used_memory` from INFO memory, in bytes. */
export async function usedMemory(client: Redis): Promise<number> {
  const info = await client.info('memory')
  return Number(/^used_memory:(\d+)/m.exec(info)?.[1])
}
