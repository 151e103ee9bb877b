/**
 * Redisson interop: Redisson's own RLock scripts (lock, unlock, renew, as Redisson sends them; background in
 * docs/background.md, "Redisson's lock") run against the same Redis as latchkey's `layout: 'redisson'`, so the two
 * exclude each other and wake each other.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openRedisBackend, redisBackend, redissonLayout } from '../src/backends/redis/index.js'
import { createLocks, type Locks } from '../src/core/locks.js'
import { BackendUnavailableError } from '../src/errors.js'
import { eventually } from './support/eventually.js'
import { deleteKeys, ioredisClient } from './support/redis-backend-module.js'

// RedissonLock.tryLockInnerAsync: KEYS[1] = name, ARGV[1] = leaseTime, ARGV[2] = `<uuid>:<threadId>`.
const REDISSON_LOCK =
  "if (redis.call('exists', KEYS[1]) == 0) then " +
  "redis.call('hset', KEYS[1], ARGV[2], 1); " +
  "redis.call('pexpire', KEYS[1], ARGV[1]); " +
  'return nil; ' +
  'end; ' +
  "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then " +
  "redis.call('hincrby', KEYS[1], ARGV[2], 1); " +
  "redis.call('pexpire', KEYS[1], ARGV[1]); " +
  'return nil; ' +
  'end; ' +
  "return redis.call('pttl', KEYS[1]);"

// RedissonLock.unlockInnerAsync: KEYS = [name, channel], ARGV = [UNLOCK_MESSAGE (0), leaseTime, lockName].
const REDISSON_UNLOCK =
  "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then " +
  'return nil;' +
  'end; ' +
  "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); " +
  'if (counter > 0) then ' +
  "redis.call('pexpire', KEYS[1], ARGV[2]); " +
  'return 0; ' +
  'else ' +
  "redis.call('del', KEYS[1]); " +
  "redis.call('publish', KEYS[2], ARGV[1]); " +
  'return 1; ' +
  'end; ' +
  'return nil;'

// RedissonLock.renewExpirationAsync: KEYS[1] = name, ARGV = [leaseTime, lockName].
const REDISSON_RENEW =
  "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then " +
  "redis.call('pexpire', KEYS[1], ARGV[1]); " +
  'return 1; ' +
  'end; ' +
  'return 0;'

describe('layout: redisson', () => {
  const namespace = `rsn-${randomUUID().slice(0, 8)}`
  const admin = ioredisClient()
  // Named, so its subscriber connection (a duplicate, same name) can be found in CLIENT LIST.
  const clientName = `rsn-${randomUUID().slice(0, 8)}`
  const client = ioredisClient(undefined, { connectionName: clientName })
  const backend = redisBackend({ client, layout: 'redisson' })
  let locks: Locks
  // A Java service's RLock: Redisson's client UUID and thread id.
  const javaField = `${randomUUID()}:1`
  const java = {
    lock: (name: string) => admin.eval(REDISSON_LOCK, 1, name, 30_000, javaField),
    unlock: (name: string) =>
      admin.eval(REDISSON_UNLOCK, 2, name, `redisson_lock__channel:{${name}}`, 0, 30_000, javaField),
    renew: (name: string) => admin.eval(REDISSON_RENEW, 1, name, 30_000, javaField),
  }
  beforeAll(() => {
    locks = createLocks({ backend, namespace })
  })
  afterAll(async () => {
    await locks.close()
    await backend.close()
    await deleteKeys(namespace)
    await client.quit()
    await admin.quit()
  })

  it("a lock held by Redisson excludes latchkey, and Redisson's unlock message wakes a latchkey waiter", async () => {
    const name = `${namespace}:order-1`
    expect(await java.lock(name)).toBeNull()
    expect(await locks.mutex('order-1').tryAcquire()).toBeUndefined()
    expect(await locks.mutex('order-1').isLocked()).toBe(true)
    const waiter = locks.mutex('order-1').acquire({ waitMs: 10_000 })
    // Its first try registered it as a watcher, and its SUBSCRIBE was acknowledged.
    const watchers = redissonLayout.keysOf({ key: name, kind: 'mutex' }).keys[4]
    const channel = `redisson_lock__channel:{${name}}`
    await eventually(
      'the waiter tried and listens',
      async () =>
        (await admin.zcard(watchers)) === 1 && ((await admin.pubsub('NUMSUB', channel)) as [string, number])[1] > 0,
    )
    // The waiter listens on Redisson's channel alone (no latchkey wake channel, which an ACL for Redisson's
    // channels would refuse): one subscription on the backend's subscriber connection.
    expect(await admin.pubsub('NUMSUB', `redisson_lock__channel:{${name}}`)).toEqual([
      `redisson_lock__channel:{${name}}`,
      1,
    ])
    const clients = String(await admin.client('LIST')).split('\n')
    const subscriber = clients.filter((line) => line.includes(`name=${clientName}`) && / sub=[1-9]/.test(line))
    expect(subscriber).toHaveLength(1)
    expect(subscriber[0]).toMatch(/ sub=1 /)
    const unlockedAt = Date.now()
    expect(await java.unlock(name)).toBe(1)
    const lease = await waiter
    // Sooner than latchkey's 2 s fallback poll and Redisson's 30 s lease: the `0` message woke it.
    expect(Date.now() - unlockedAt).toBeLessThan(1_500)
    await lease.release()
  })

  it('a lock held by latchkey is a Redisson RLock hash: Redisson is excluded and woken on release', async () => {
    const name = `${namespace}:order-2`
    const lease = await locks.mutex('order-2').acquire({ ttlMs: 10_000 })
    const hash = await admin.hgetall(name)
    expect(Object.keys(hash)).toHaveLength(1)
    expect(Object.keys(hash)[0]).toMatch(/^[0-9a-f-]{36}:\d+$/)
    expect(Object.values(hash)).toEqual(['1'])
    expect(await admin.pttl(name)).toBeGreaterThan(9_000)
    // Redisson's lock script answers with the remaining TTL: not acquired.
    expect(await java.lock(name)).toBeGreaterThan(0)
    // Redisson cannot unlock a lock it does not hold.
    expect(await java.unlock(name)).toBeNull()
    expect(await admin.exists(name)).toBe(1)

    const sub = admin.duplicate()
    const messages: string[] = []
    sub.on('message', (_channel: string, message: string) => messages.push(message))
    await sub.subscribe(`redisson_lock__channel:{${name}}`)
    await lease.release()
    await eventually('the release message arrives', () => messages.length > 0, 500, 10)
    expect(messages).toEqual(['0'])
    expect(await admin.exists(name)).toBe(0)
    sub.disconnect()

    expect(await java.lock(name)).toBeNull()
    expect(await java.renew(name)).toBe(1)
    expect(await java.unlock(name)).toBe(1)
  })

  it("Redisson's reentrant hold count keeps latchkey out until the last unlock", async () => {
    const name = `${namespace}:order-3`
    expect(await java.lock(name)).toBeNull()
    expect(await java.lock(name)).toBeNull()
    expect(await java.unlock(name)).toBe(0)
    expect(await locks.mutex('order-3').tryAcquire()).toBeUndefined()
    expect(await java.unlock(name)).toBe(1)
    const lease = await locks.mutex('order-3').tryAcquire()
    expect(lease).toBeDefined()
    // latchkey's fencing counter is Redisson's RFencedLock token key.
    expect(BigInt((await admin.get(`redisson_lock_token:{${name}}`)) ?? '0')).toBe(lease?.token)
    await lease?.release()
  })

  it("forceRelease drops a Redisson holder, as Redisson's forceUnlock would", async () => {
    const name = `${namespace}:order-4`
    expect(await java.lock(name)).toBeNull()
    expect(await backend.forceRelease({ key: name, kind: 'mutex' })).toBe(true)
    expect(await admin.exists(name)).toBe(0)
  })
})

describe('openRedisBackend', () => {
  it('opens a backend on a client of its own and closes that client in close()', async () => {
    const namespace = `open-${randomUUID().slice(0, 8)}`
    const backend = await openRedisBackend(process.env.LATCHKEY_REDIS_URL ?? 'redis://127.0.0.1:6379')
    const locks = createLocks({ backend, namespace })
    try {
      const lease = await locks.mutex('a').acquire()
      expect(await locks.mutex('a').isLocked()).toBe(true)
      await lease.release()
    } finally {
      await locks.close()
      await backend.close()
      await deleteKeys(namespace)
    }
    await expect(
      backend.tryAcquire({
        key: `${namespace}:a`,
        kind: 'mutex',
        owner: 'x',
        ttlMs: 1_000,
        permits: 1,
        lockDelayMs: 0,
        queue: false,
        queueTtlMs: 1_000,
      }),
    ).rejects.toBeInstanceOf(BackendUnavailableError)
  })
})
