/**
 * Redis-specific behaviour on a private redis-server (started and stopped here; the shared 6379 server is
 * never touched): outages map to BackendUnavailableError and lost leases, everything resumes after a
 * restart with the same client, a release wakes one waiter, not all (counted in INFO commandstats), and
 * the WAIT option (waitReplicas) is issued and undoes a grant too few replicas acknowledged.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Backend } from '../src/backend/types.js'
import { latchkeyLayout, redisBackend } from '../src/backends/redis/index.js'
import { createLocks, type Locks } from '../src/core/locks.js'
import { BackendUnavailableError, LockLostError } from '../src/errors.js'
import { eventually } from './support/eventually.js'
import { clientFlavours, ioredisClient } from './support/redis-backend-module.js'
import { privateRedisServer } from './support/redis-server-suite.js'
import { timed } from './support/timed.js'

const server = privateRedisServer()

/** Holds a lease a moment, as work would (not to order anything). */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** `backend`, counting the tries it is asked for. */
function countingTries(backend: Backend): { backend: Backend; tries: () => number } {
  let tries = 0
  const counted = Object.create(backend) as Backend
  counted.tryAcquire = (request) => {
    tries++
    return backend.tryAcquire(request)
  }
  return { backend: counted, tries: () => tries }
}

/** How many mutex watchers of lock `key` are registered (the W zset of key-layout.ts). */
async function watchers(admin: ReturnType<typeof ioredisClient>, key: string): Promise<number> {
  return admin.zcard(latchkeyLayout.keysOf({ key, kind: 'mutex' }).keys[4])
}

function aborted(signal: AbortSignal, withinMs: number): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason)
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`lease.signal not aborted within ${withinMs} ms`)), withinMs)
    signal.addEventListener('abort', () => {
      clearTimeout(timer)
      resolve(signal.reason)
    })
  })
}

const flavours = clientFlavours(() => server.url)

describe.each(flavours)('redis outage (%s)', (_name, open) => {
  it('fails new acquires with BackendUnavailableError, aborts an unrenewable lease, resumes after restart', async () => {
    const { client, close } = await open()
    const backend = redisBackend({ client })
    const counted = countingTries(backend)
    const namespace = `faults-${randomUUID()}`
    const locks = createLocks({ backend: counted.backend, namespace })
    const admin = ioredisClient(server.url)
    try {
      const lease = await locks.mutex('held').acquire({ ttlMs: 1_200 })
      await server.stop()

      const error = await locks
        .mutex('other')
        .tryAcquire()
        .catch((e: unknown) => e)
      expect(error).toBeInstanceOf(BackendUnavailableError)
      expect((error as BackendUnavailableError).retryable).toBe(true)
      // A waiting caller keeps trying until its wait runs out; the server, not a holder, is why it failed.
      const waited = await locks
        .mutex('other')
        .acquire({ waitMs: 300 })
        .catch((e: unknown) => e)
      expect(waited).toBeInstanceOf(BackendUnavailableError)
      expect((waited as BackendUnavailableError).cause).toBeInstanceOf(BackendUnavailableError)
      // The watchdog cannot renew: the lease is reported lost before it could have expired on the server.
      expect(await aborted(lease.signal, 3_000)).toBeInstanceOf(LockLostError)

      // A waiter started during the outage gets the lock once Redis is back, with the same client (the
      // grant of the first tryAcquire above, resent by ioredis after its reply timed out, was given back).
      const triedBefore = counted.tries()
      const pending = locks.mutex('other').acquire({ waitMs: 15_000, ttlMs: 5_000 })
      await eventually('the waiter tried during the outage', () => counted.tries() > triedBefore)
      await server.start()
      const resumed = await pending
      expect(resumed.token).toBeGreaterThan(0n)

      // Notifications resume too: a release hands the lock to a waiter.
      const next = locks.mutex('other').acquire({ waitMs: 10_000 })
      await eventually('the waiter watches', async () => (await watchers(admin, `${namespace}:other`)) === 1)
      await resumed.release()
      await (await next).release()
    } finally {
      await server.start()
      admin.disconnect()
      await locks.close()
      await backend.close()
      await close()
    }
  }, 40_000)

  it('a server that stops answering: a command fails after commandTimeoutMs, and its late grant is given back', async () => {
    const { client, close } = await open()
    const admin = ioredisClient(server.url)
    const backend = redisBackend({ client, commandTimeoutMs: 300 })
    const namespace = `paused-${randomUUID()}`
    const locks = createLocks({ backend, namespace })
    try {
      // CLIENT PAUSE ALL: the server holds every other client's commands (and runs them) when the pause ends.
      await admin.call('CLIENT', 'PAUSE', '1500', 'ALL')
      const { error, ms: tookMs } = await timed(() => locks.mutex('p').tryAcquire())
      expect(error).toBeInstanceOf(BackendUnavailableError)
      expect((error as Error).message).toContain('commandTimeoutMs')
      // Failed by the deadline, not by the end of the pause.
      expect(tookMs).toBeGreaterThanOrEqual(290)
      expect(tookMs).toBeLessThan(1_400)
      // The acquire ran when the pause ended and granted a lock nobody holds: the backend gives it back.
      // Its token's counter exists from then on; isLocked fails (paused) until then, which counts as locked.
      const counter = latchkeyLayout.keysOf({ key: `${namespace}:p`, kind: 'mutex' }).keys[6]
      await eventually(
        'the late grant ran and was given back',
        async () =>
          (await admin.exists(counter)) === 1 &&
          !(await locks
            .mutex('p')
            .isLocked()
            .catch(() => true)),
        5_000,
        50,
      )
      const lease = await locks.mutex('p').tryAcquire()
      expect(lease).toBeDefined()
      await lease?.release()
    } finally {
      await admin.call('CLIENT', 'UNPAUSE').catch(() => undefined)
      await admin.quit()
      await locks.close()
      await backend.close()
      await close()
    }
  }, 20_000)
})

/** Sum of `calls` of the named commands in INFO commandstats. */
async function commandCalls(client: ReturnType<typeof ioredisClient>, names: readonly string[]): Promise<number> {
  const info = await client.info('commandstats')
  let total = 0
  for (const name of names) {
    const m = new RegExp(`^cmdstat_${name}:calls=(\\d+)`, 'm').exec(info)
    total += Number(m?.[1] ?? 0)
  }
  return total
}

describe('wake-one handoff', () => {
  let admin: ReturnType<typeof ioredisClient>
  let backend: Backend
  let locks: Locks
  beforeAll(async () => {
    admin = ioredisClient(server.url)
  })
  afterAll(async () => {
    await locks?.close()
    await backend?.close()
    await admin.flushall()
    await admin.quit()
  })

  it('20 waiters on one key: a release costs about one retry, not one per waiter', async () => {
    const client = ioredisClient(server.url)
    backend = redisBackend({ client })
    const namespace = `herd-${randomUUID()}`
    locks = createLocks({ backend, namespace })
    const lock = locks.mutex('hot')
    const waiters = 20
    const rounds = 5
    // Warm up: load the scripts and subscribe the channel.
    await (await lock.acquire()).release()
    const holder = await lock.acquire()
    let acquisitions = 0
    const before = await commandCalls(admin, ['evalsha', 'eval'])
    const all = Array.from({ length: waiters }, async () => {
      for (let i = 0; i < rounds; i++) {
        const lease = await lock.acquire({ waitMs: 20_000 })
        acquisitions++
        await sleep(1)
        await lease.release()
      }
    })
    await eventually('every waiter watches', async () => (await watchers(admin, `${namespace}:hot`)) === waiters)
    await holder.release()
    await Promise.all(all)
    const calls = (await commandCalls(admin, ['evalsha', 'eval'])) - before
    // acquire + release per acquisition, plus each waiter's first (failed) try and a few lost races:
    // a broadcast would cost about `waiters` tries per release instead.
    expect(acquisitions).toBe(waiters * rounds)
    expect(calls / acquisitions).toBeLessThanOrEqual(5)
    await locks.close()
    await backend.close()
    await client.quit()
  }, 30_000)

  it('across processes (one backend and subscriber each), releases wake the waiters in order of arrival', async () => {
    const namespace = `order-${randomUUID()}`
    const peers = Array.from({ length: 3 }, () => {
      const client = ioredisClient(server.url)
      const peer = redisBackend({ client })
      return { client, backend: peer, locks: createLocks({ backend: peer, namespace }) }
    })
    const first = peers[0] as (typeof peers)[number]
    const holder = await first.locks.mutex('queue').acquire()
    const order: number[] = []
    const waiters: Promise<void>[] = []
    for (let i = 0; i < 9; i++) {
      const peer = peers[i % 3] as (typeof peers)[number]
      waiters.push(
        peer.locks
          .mutex('queue')
          .acquire({ waitMs: 20_000 })
          .then(async (lease) => {
            order.push(i)
            await sleep(5)
            await lease.release()
          }),
      )
      // Each waiter's first try registers it before the next one arrives.
      await eventually(
        `waiter ${i} watches`,
        async () => (await watchers(first.client, `${namespace}:queue`)) === i + 1,
      )
    }
    await holder.release()
    await Promise.all(waiters)
    // With one wake per process per release, the three processes' waiters would race for every handoff.
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8])
    for (const peer of peers) {
      await peer.locks.close()
      await peer.backend.close()
      await peer.client.quit()
    }
  }, 30_000)
})

describe('waitReplicas', () => {
  const server = privateRedisServer()

  const waits = async (admin: ReturnType<typeof ioredisClient>) =>
    Number(/^cmdstat_wait:calls=(\d+)/m.exec(await admin.info('commandstats'))?.[1] ?? 0)

  it('issues WAIT after each grant and renewal; with 0 replicas locks work as usual', async () => {
    const admin = ioredisClient(server.url)
    const client = ioredisClient(server.url)
    const backend = redisBackend({ client, waitReplicas: { replicas: 0, timeoutMs: 100 } })
    const locks = createLocks({ backend })
    try {
      const before = await waits(admin)
      const lease = await locks.mutex('w').acquire()
      await lease.extend()
      expect(await locks.mutex('w').tryAcquire()).toBeUndefined()
      await lease.release()
      expect((await waits(admin)) - before).toBe(2)
    } finally {
      await locks.close()
      await backend.close()
      await client.quit()
      await admin.quit()
    }
  })

  it('too few replicas: the grant is undone and the acquire fails with BackendUnavailableError', async () => {
    const client = ioredisClient(server.url)
    const backend = redisBackend({ client, waitReplicas: { replicas: 1, timeoutMs: 50 } })
    const locks = createLocks({ backend })
    try {
      const error = await locks
        .mutex('w1')
        .tryAcquire()
        .catch((e: unknown) => e)
      expect(error).toBeInstanceOf(BackendUnavailableError)
      expect(String((error as Error).message)).toMatch(/0 of 1 replicas of Redis/)
      expect(await locks.mutex('w1').isLocked()).toBe(false)
    } finally {
      await locks.close()
      await backend.close()
      await client.quit()
    }
  })
})
