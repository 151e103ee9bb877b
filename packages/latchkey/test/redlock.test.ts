/**
 * RedLock against the five shared redis-server nodes of scripts/servers/redlock.sh: the conformance suite, the
 * node-redis adapter, fencing refused, unsupported kinds, and multi() mixing RedLock with the memory backend.
 * Fault injection (killed, paused and restarted nodes) is in redlock-faults.test.ts, on private nodes.
 */
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { memoryBackend } from '../src/backends/memory/index.js'
import {
  openRedlockBackend,
  parseRedlockUrl,
  REDLOCK_KEY_PREFIX,
  redlockBackend,
} from '../src/backends/redlock/index.js'
import { createLocks, type Locks } from '../src/core/locks.js'
import { UnsupportedError } from '../src/errors.js'
import { describeBackendConformance } from '../src/testing/index.js'
import {
  createNodeRedisRedlockBackend,
  createRedlockBackend,
  deleteRedlockKeys,
  REDLOCK_URLS,
  redlockIoredis,
} from './support/redlock-backend-module.js'

const module = fileURLToPath(new URL('./support/redlock-backend-module.ts', import.meta.url))

describeBackendConformance('redlock (5 nodes, ioredis)', () => createRedlockBackend(), {
  processBackend: { module, export: 'createRedlockBackend' },
  cleanup: (namespace) => deleteRedlockKeys(namespace),
})

describe('redlock: options, capabilities and adapters', () => {
  const namespace = `lkr-${process.pid}-${Date.now()}`
  const opened: Locks[] = []
  const backends = [createRedlockBackend()]
  const track = (locks: Locks) => {
    opened.push(locks)
    return locks
  }
  afterAll(async () => {
    await Promise.all(opened.map((l) => l.close()))
    await Promise.all(backends.map((b) => b.close()))
    await deleteRedlockKeys(namespace)
  })

  it('requireFencing fails at construction with UnsupportedError naming the redlock backend', () => {
    const backend = backends[0] as (typeof backends)[0]
    expect(backend.capabilities.fencing).toBe('none')
    expect(() => createLocks({ backend, requireFencing: true })).toThrow(UnsupportedError)
    expect(() => createLocks({ backend, requireFencing: true })).toThrow(/redlock backend issues no fencing tokens/)
  })

  it('declares mutex only: semaphores, read-write and fair locks are refused, tokens are 0n', async () => {
    const locks = track(createLocks({ backend: backends[0] as (typeof backends)[0], namespace }))
    expect(() => locks.semaphore('s', { permits: 2 })).toThrow(UnsupportedError)
    expect(() => locks.readWrite('rw')).toThrow(UnsupportedError)
    const lease = await locks.mutex('tokens').acquire()
    expect(lease.token).toBe(0n)
    await lease.release()
  })

  it('rejects unsafe or malformed options before any I/O', () => {
    const clients = REDLOCK_URLS.map(redlockIoredis)
    try {
      expect(() => redlockBackend({ clients: [] })).toThrow(TypeError)
      expect(() => redlockBackend({ clients, quorum: 2 })).toThrow(/quorum must be an integer above 2.5/)
      expect(() => redlockBackend({ clients, quorum: 6 })).toThrow(RangeError)
      expect(() => redlockBackend({ clients, driftFactor: -1 })).toThrow(/driftFactor/)
      expect(() => redlockBackend({ clients, nodeTimeoutMs: 0 })).toThrow(/nodeTimeoutMs/)
      expect(() => redlockBackend({ clients, retry: { attempts: 1.5 } })).toThrow(/retry.attempts/)
      expect(() => redlockBackend({ clients: [{}] as never })).toThrow(/clients\[0\]/)
      expect(redlockBackend({ clients, quorum: 5 }).name).toBe('redlock')
    } finally {
      for (const c of clients) c.disconnect()
    }
  })

  it('opens from a redlock:// URL, owning its clients; rejects malformed URLs', async () => {
    const url = `redlock://${REDLOCK_URLS.map((u) => new URL(u).host).join(',')}?nodeTimeoutMs=100`
    expect(parseRedlockUrl(url).nodes).toHaveLength(REDLOCK_URLS.length)
    expect(parseRedlockUrl('redlock://a:1,b:2,c:3/2?quorum=3')).toEqual({
      nodes: [
        { host: 'a', port: 1 },
        { host: 'b', port: 2 },
        { host: 'c', port: 3 },
      ],
      db: 2,
      options: { quorum: 3 },
    })
    expect(() => parseRedlockUrl('redis://a:1')).toThrow(RangeError)
    expect(() => parseRedlockUrl('redlock://a:99999')).toThrow(/port "99999" of server "a:99999"/)
    expect(() => parseRedlockUrl('redlock://a:1?fencing=1')).toThrow(/unknown option "fencing" in redlock URL/)
    const backend = await openRedlockBackend(url)
    const locks = createLocks({ backend, namespace })
    const lease = await locks.mutex('from-url').acquire()
    await lease.release()
    await locks.close()
    await backend.close()
  })

  it('a split vote (no owner with a majority) is one round, "not acquired" with a pause below retry.delayMs, and leaves none of our keys', async () => {
    const admin = REDLOCK_URLS.map(redlockIoredis)
    const key = `${REDLOCK_KEY_PREFIX}${namespace}:split`
    // A pause tryAcquire would have to sleep through if it retried split votes itself (it used to).
    const backend = createRedlockBackend({ retry: { delayMs: 10_000 } })
    try {
      // Owner x holds nodes 0 and 1, owner y node 2: nobody has 3 of 5, and we can get only nodes 3 and 4.
      await Promise.all([0, 1, 2].map((i) => admin[i]?.set(key, i < 2 ? 'x' : 'y', 'PX', 60_000)))
      const request = { key: `${namespace}:split`, kind: 'mutex' as const, owner: 'me', ttlMs: 60_000 }
      const sentAt = performance.now()
      const result = await backend.tryAcquire({ ...request, permits: 1, lockDelayMs: 0, queue: false, queueTtlMs: 0 })
      expect(performance.now() - sentAt).toBeLessThan(1_000)
      expect(result.acquired).toBe(false)
      const pause = result.acquired ? -1 : (result.retryAfterMs ?? -1)
      expect(pause).toBeGreaterThanOrEqual(0)
      expect(pause).toBeLessThan(10_000)
      expect(await Promise.all(admin.map((a) => a.get(key)))).toEqual(['x', 'x', 'y', null, null])
      // The waiting acquire retries the split vote, and the caller's abort ends that wait at once, not after a pause.
      const locks = track(createLocks({ backend, namespace }))
      const abortedAt = performance.now() + 300
      await expect(locks.mutex('split').acquire({ signal: AbortSignal.timeout(300) })).rejects.toMatchObject({
        name: 'TimeoutError',
      })
      expect(performance.now() - abortedAt).toBeLessThan(1_000)
      // With x on a majority it is plainly held, and the answer says when x's keys run out.
      await admin[3]?.set(key, 'x', 'PX', 5_000)
      const held = await backend.tryAcquire({ ...request, permits: 1, lockDelayMs: 0, queue: false, queueTtlMs: 0 })
      expect(held.acquired).toBe(false)
      const retryAfter = held.acquired ? 0 : (held.retryAfterMs ?? 0)
      expect(retryAfter).toBeGreaterThan(0)
      expect(retryAfter).toBeLessThanOrEqual(5_000) // x loses its majority when the shortest-lived key expires
    } finally {
      await Promise.all(admin.map((a) => a.del(key)))
      for (const a of admin) a.disconnect()
      await backend.close()
    }
  })

  it('node-redis v5 clients work through the adapter, and exclude ioredis holders of the same name', async () => {
    const nodeRedis = await createNodeRedisRedlockBackend()
    backends.push(nodeRedis)
    const a = track(createLocks({ backend: nodeRedis, namespace }))
    const b = track(createLocks({ backend: backends[0] as (typeof backends)[0], namespace }))
    const lease = await a.mutex('mixed-clients').acquire({ ttlMs: 5_000 })
    expect(await b.mutex('mixed-clients').tryAcquire()).toBeUndefined()
    expect(await b.mutex('mixed-clients').isLocked()).toBe(true)
    await lease.extend(8_000)
    await lease.release()
    const other = await b.mutex('mixed-clients').tryAcquire()
    expect(other).toBeDefined()
    expect(await a.mutex('mixed-clients').tryAcquire()).toBeUndefined()
    await other?.release()
  })

  it('multi() mixing a RedLock lock and a memory lock is all-or-nothing and rolls back', async () => {
    const memory = memoryBackend()
    const red = track(createLocks({ backend: backends[0] as (typeof backends)[0], namespace }))
    const mem = track(createLocks({ backend: memory, namespace }))
    const mem2 = track(createLocks({ backend: memory, namespace }))
    const both = () => red.multi([red.mutex('multi-r'), mem.mutex('multi-m')])
    // The memory lock is taken elsewhere: the RedLock part, if taken, must be given back.
    const blocker = await mem2.mutex('multi-m').acquire()
    expect(await both().tryAcquire()).toBeUndefined()
    expect(await red.mutex('multi-r').isLocked()).toBe(false)
    await expect(both().acquire({ waitMs: 50 })).rejects.toThrow(/not acquired/)
    expect(await red.mutex('multi-r').isLocked()).toBe(false)
    await blocker.release()
    const lease = await both().acquire({ waitMs: 2_000 })
    expect(lease.token).toBe(blocker.token + 1n) // the highest part's token: memory's next one, RedLock's is 0n
    expect(await red.mutex('multi-r').isLocked()).toBe(true)
    expect(await mem2.mutex('multi-m').tryAcquire()).toBeUndefined()
    await lease.release()
    expect(await both().isLocked()).toBe(false)
    await memory.close()
  })
})
