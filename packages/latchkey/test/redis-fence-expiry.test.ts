/**
 * The Redis fencing counter expires once its lock has been idle for `fenceIdleTtlMs`, so a lock per order
 * leaves nothing behind, and a counter that restarts (expired, deleted) still issues higher tokens.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import type { Backend, LockKind } from '../src/backend/types.js'
import { latchkeyLayout, redisBackend, redissonLayout } from '../src/backends/redis/index.js'
import { eventually } from './support/eventually.js'
import { deleteKeys, ioredisClient, nodeRedisClient } from './support/redis-backend-module.js'
import { churnNames, countKeys, usedMemory } from './support/redis-idle-names.js'

const ns = `fence-idle-${randomUUID().slice(0, 8)}`
const admin = ioredisClient()
const client = ioredisClient()

afterAll(async () => {
  await deleteKeys(ns)
  await client.quit()
  await admin.quit()
})

/** One lease of `kind` on `key`, released at once; returns its token. */
async function grantOnce(backend: Backend, key: string, kind: LockKind = 'mutex'): Promise<bigint> {
  const request = { key, kind, owner: randomUUID(), ttlMs: 10_000, permits: 2 }
  const result = await backend.tryAcquire({ ...request, lockDelayMs: 0, queue: false, queueTtlMs: 0 })
  if (!result.acquired) throw new Error(`${key} was not free`)
  expect(await backend.release(request)).toBe(true)
  return result.token
}

const fenceKey = (key: string, kind: LockKind = 'mutex') => latchkeyLayout.keysOf({ key, kind }).keys[6]

describe('redis fencing counter expiry', () => {
  it('the counter key has an idle TTL after acquire and after release, refreshed by the grant of another process', async () => {
    const backend = redisBackend({ client })
    const nodeClient = await nodeRedisClient()
    const viaNodeRedis = redisBackend({ client: nodeClient })
    try {
      for (const [kind, lib] of [
        ['mutex', backend],
        ['semaphore', backend],
        ['mutex', viaNodeRedis],
      ] as const) {
        const key = `${ns}:ttl:${kind}:${randomUUID().slice(0, 4)}`
        const request = { key, kind, owner: randomUUID(), ttlMs: 10_000, permits: 2 }
        const acquired = await lib.tryAcquire({ ...request, lockDelayMs: 0, queue: false, queueTtlMs: 0 })
        expect(acquired.acquired).toBe(true)
        const afterAcquire = await admin.pttl(fenceKey(key, kind))
        expect(afterAcquire).toBeGreaterThan(86_000_000)
        expect(afterAcquire).toBeLessThanOrEqual(86_400_000)
        await admin.pexpire(fenceKey(key, kind), 60_000)
        expect(await lib.release(request)).toBe(true)
        // Release grants nothing here, so it leaves the TTL the last grant set; the next grant refreshes it (a
        // process that refreshed it itself lately leaves it: the next test).
        expect(await admin.pttl(fenceKey(key, kind))).toBeGreaterThan(0)
        const other = redisBackend({ client })
        await grantOnce(other, key, kind)
        await other.close()
        expect(await admin.pttl(fenceKey(key, kind))).toBeGreaterThan(86_000_000)
      }
    } finally {
      await viaNodeRedis.close()
      await nodeClient.close()
      await backend.close()
    }
  })

  it('a process that keeps taking a mutex refreshes the counter once per eighth of fenceIdleTtlMs: 7/8 of it is left at every token', async () => {
    const idleMs = 800
    const backend = redisBackend({ client, fenceIdleTtlMs: idleMs })
    try {
      const key = `${ns}:keep:${randomUUID().slice(0, 4)}`
      const left: number[] = []
      const started = performance.now()
      // Grants for over three eighths, so the process sends both builds of the short acquire several times.
      while (performance.now() - started < (idleMs * 3) / 8) {
        const sent = performance.now()
        await grantOnce(backend, key)
        const pttl = await admin.pttl(fenceKey(key))
        // What the counter had at the token is at least what is left now plus the time since the try was sent, less
        // the 1 ms Redis's whole-millisecond expiry times can take from it (a run failed by 0.09 ms without it).
        expect(pttl + (performance.now() - sent)).toBeGreaterThanOrEqual((idleMs * 7) / 8 - 1)
        left.push(pttl)
      }
      // Not every grant refreshed it (the PEXPIRE the short acquire leaves out).
      expect(Math.min(...left)).toBeLessThan(idleMs - idleMs / 16)
    } finally {
      await backend.close()
    }
  })

  it("the Redisson layout's counter (shared with Java's RFencedLock) keeps no TTL, and refuses fenceIdleTtlMs", async () => {
    const backend = redisBackend({ client, layout: 'redisson' })
    try {
      const key = `${ns}:rsn:${randomUUID().slice(0, 4)}`
      await grantOnce(backend, key)
      expect(await admin.pttl(redissonLayout.keysOf({ key, kind: 'mutex' }).keys[6])).toBe(-1)
    } finally {
      await backend.close()
    }
    expect(() => redisBackend({ client, layout: 'redisson', fenceIdleTtlMs: 1_000 })).toThrow(/fenceIdleTtlMs/)
    expect(() => redisBackend({ client, fenceIdleTtlMs: -1 })).toThrow(RangeError)
    expect(() => redisBackend({ client, fenceIdleTtlMs: 1.5 })).toThrow(/received 1.5/)
  })

  it('a counter that expired or was deleted restarts above every token issued before', async () => {
    const backend = redisBackend({ client, fenceIdleTtlMs: 300 })
    try {
      for (const kind of ['mutex', 'semaphore', 'fair'] as const) {
        const key = `${ns}:restart:${kind}`
        let last = 0n
        const next = async () => {
          const token = await grantOnce(backend, key, kind)
          expect(token).toBeGreaterThan(last)
          last = token
        }
        for (let i = 0; i < 5; i++) await next()
        expect(await admin.del(fenceKey(key, kind))).toBe(1)
        await next()
        await next()
        // Real expiry: the counter vanishes by itself once the lock was idle for fenceIdleTtlMs.
        await eventually(
          `${kind} counter expiry`,
          async () => (await admin.exists(fenceKey(key, kind))) === 0,
          10_000,
          50,
        )
        await next()
      }
    } finally {
      await backend.close()
    }
  })

  it('10 000 names acquired and released leave no key in Redis once they were idle for fenceIdleTtlMs', async () => {
    // Longer than the churn takes even on a loaded machine (243 ms idle, over 1 s seen under load), so that every
    // counter is still there when they are counted right after it.
    const backend = redisBackend({ client, fenceIdleTtlMs: 5_000 })
    const prefix = `${ns}:order:`
    const patterns = latchkeyLayout.patternsFor(prefix)
    try {
      const before = await usedMemory(admin)
      const started = performance.now()
      await churnNames(backend, prefix, 10_000)
      const churnMs = performance.now() - started
      const justAfter = await countKeys(admin, patterns)
      const memoryJustAfter = await usedMemory(admin)
      let idle = -1
      await eventually(
        'no key left of 10 000 idle names',
        async () => {
          idle = await countKeys(admin, patterns)
          return idle === 0
        },
        30_000,
        250,
      )
      expect(idle).toBe(0)
      const after = await usedMemory(admin)
      console.info(
        `10 000 names in ${Math.round(churnMs)} ms: ${justAfter} keys right after release (${memoryJustAfter - before} B), ` +
          `${idle} after the idle TTL; used_memory before ${before} B, after ${after} B`,
      )
      // Right after, only the counters remain: one per name, until they expire.
      expect(justAfter).toBe(10_000)
    } finally {
      await backend.close()
    }
  }, 60_000)
})
