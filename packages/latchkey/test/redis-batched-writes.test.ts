/**
 * The Redis backend on an ioredis client writes the commands one turn of the event loop sends while others are in
 * flight in few socket writes (batched-writes.ts: batches of at most 8), and a lone command at once, on the shared server.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { redisBackend } from '../src/backends/redis/index.js'
import { createLocks } from '../src/index.js'
import { ioredisClient } from './support/redis-backend-module.js'

const client = ioredisClient()
afterAll(async () => {
  await client.quit()
})

/** Counts the socket writes (`_write` and `_writev` calls, one system call each) of `own` during `run`. */
async function socketWrites(own: ReturnType<typeof ioredisClient>, run: () => Promise<unknown>): Promise<number> {
  const stream = own.stream as unknown as Record<'_write' | '_writev', (...args: unknown[]) => unknown>
  let writes = 0
  const write = stream._write
  const writev = stream._writev
  stream._write = function (this: unknown, ...args: unknown[]) {
    writes++
    return write.apply(this, args)
  }
  stream._writev = function (this: unknown, ...args: unknown[]) {
    writes++
    return writev.apply(this, args)
  }
  try {
    await run()
  } finally {
    stream._write = write
    stream._writev = writev
  }
  return writes
}

/**
 * Runs `test` with locks on a backend of its own ioredis client (connected first, so its socket exists), then closes
 * them and removes the keys it left (the fencing counters).
 */
async function withOwnClient(
  test: (own: ReturnType<typeof ioredisClient>, locks: ReturnType<typeof createLocks>, prefix: string) => Promise<void>,
): Promise<void> {
  const own = ioredisClient()
  await own.ping()
  const backend = redisBackend({ client: own })
  const prefix = `batched-writes-${randomUUID()}`
  const locks = createLocks({ backend, namespace: prefix, ttlMs: 10_000 })
  try {
    await test(own, locks, prefix)
  } finally {
    await locks.close()
    await backend.close()
    const keys = await client.keys(`latchkey:{${prefix}*`)
    if (keys.length > 0) await client.del(...keys)
    await own.quit()
  }
}

describe('the Redis backend on ioredis, socket writes', () => {
  it('50 uncontended locks taken in one turn leave in batches of at most 8 commands, their releases too, and all are granted and released', async () => {
    await withOwnClient(async (own, locks, prefix) => {
      const names = Array.from({ length: 50 }, (_, i) => `k${i}`)
      let leases: Awaited<ReturnType<ReturnType<typeof locks.mutex>['acquire']>>[] = []
      // The first is written at once (nothing in flight), the other 49 in batches of 8 (each followed by one written
      // alone as the batch is let go) and what is left at the end of the turn: 12 writes. Unbatched: 50; whole turns: 2.
      const acquireWrites = await socketWrites(own, async () => {
        leases = await Promise.all(names.map((n) => locks.mutex(n).acquire({ waitMs: 0 })))
      })
      expect(acquireWrites).toBeGreaterThanOrEqual(7)
      expect(acquireWrites).toBeLessThanOrEqual(13)
      const tokens = new Set(leases.map((l) => l.token))
      expect(tokens.size).toBe(50)
      const releaseWrites = await socketWrites(own, async () => {
        // Released while one command is in flight, so all 50 are batched (the PING is one more write).
        const slow = own.ping()
        await Promise.all(leases.map((l) => l.release()))
        await slow
      })
      expect(releaseWrites).toBeGreaterThanOrEqual(8)
      expect(releaseWrites).toBeLessThanOrEqual(13)
      // Only the fencing counters stay (they outlive the locks).
      expect((await client.keys(`latchkey:{${prefix}*`)).filter((k) => !k.endsWith(':fence'))).toEqual([])
    })
  })

  it('a lone command, nothing in flight, is written at once (not held back to the next tick)', async () => {
    await withOwnClient(async (own, locks) => {
      let writtenSync = 0
      await socketWrites(own, async () => {
        const stream = own.stream as unknown as { writableLength: number; writableCorked: number }
        const pending = locks.mutex('solo').acquire({ waitMs: 0 })
        // acquire() runs up to the send synchronously only through its first awaits: wait for the command to go
        // out, then check that it was not corked.
        await new Promise<void>((resolve) => {
          const check = () => {
            if (own.commandQueue.length > 0) {
              writtenSync = stream.writableCorked
              resolve()
            } else setImmediate(check)
          }
          check()
        })
        const lease = await pending
        await lease.release()
      })
      expect(writtenSync).toBe(0)
    })
  })
})
