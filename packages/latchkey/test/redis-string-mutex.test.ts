/**
 * A plain mutex of the latchkey layout is kept as the string key M, "<token>|<lockDelayMs>|<owner>" expiring when its
 * slot frees (scripts/free-mutex.lua), on the shared server: whichever script grants it (the short acquire, the full
 * one, a release handing it over), and every script that reads M (renew, release, inspect, isLocked, forceRelease,
 * the other kinds of the family) understands it. Semaphores and the other kinds keep the hash.
 */
import { describe, expect, it } from 'vitest'
import type { RedisReleaseSubscription } from '../src/backends/redis/release-subscription.js'
import { backendRequest as request, tokenOf } from './support/backend-request.js'
import { eventually } from './support/eventually.js'
import { redisScope } from './support/redis-scope.js'

const { client, backend, lockName } = redisScope('string-mutex')

describe('the Redis backend keeps a plain mutex of the latchkey layout as a string key', () => {
  it('a grant is the string "<token>|<lockDelayMs>|<owner>" expiring after lease + lock-delay; renew moves it', async () => {
    const b = backend()
    const name = lockName()
    const m = `latchkey:{${name}}`
    const r = { ...request(name), ttlMs: 20_000, lockDelayMs: 3_000 }
    const token = tokenOf(await b.tryAcquire(r))
    expect(await client.type(m)).toBe('string')
    expect(await client.get(m)).toBe(`${token}|3000|${r.owner}`)
    expect(await client.pttl(m)).toBeGreaterThan(22_000)
    expect(await client.pttl(m)).toBeLessThanOrEqual(23_000)
    // Another owner's renew changes nothing; the holder's moves the expiry and keeps its token and lock-delay.
    expect(await b.renew({ ...request(name), ttlMs: 60_000 })).toBe(false)
    expect(await b.renew({ ...r, ttlMs: 60_000 })).toBe(true)
    expect(await client.get(m)).toBe(`${token}|3000|${r.owner}`)
    expect(await client.pttl(m)).toBeGreaterThan(62_000)
    expect(await b.release(r)).toBe(true)
    expect(await client.exists(m)).toBe(0)
  })

  it('inspect, isLocked and forceRelease read the string holder', async () => {
    const b = backend()
    const name = lockName()
    const r = request(name)
    const before = Date.now()
    const token = tokenOf(await b.tryAcquire(r))
    const seen = await b.inspect(name)
    expect(seen.holders).toEqual([{ owner: r.owner, kind: 'mutex', token, expiresAt: expect.any(Number) }])
    const expiresAt = seen.holders[0]?.expiresAt as number
    expect(expiresAt).toBeGreaterThanOrEqual(before + 10_000 - 1_000)
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 10_000 + 1_000)
    expect(await b.isLocked({ key: name, kind: 'mutex', permits: 1 })).toBe(true)
    expect(await b.forceRelease({ key: name, kind: 'mutex' })).toBe(true)
    expect(await b.isLocked({ key: name, kind: 'mutex', permits: 1 })).toBe(false)
    expect(await b.release(r)).toBe(false)
  })

  it('readers, writers and fair locks of the family wait for the string holder, and a mutex for their hash', async () => {
    const b = backend()
    const name = lockName()
    const m = `latchkey:{${name}}`
    const held = request(name)
    tokenOf(await b.tryAcquire(held))
    for (const kind of ['read', 'write', 'fair'] as const)
      expect(await b.tryAcquire(request(name, kind))).toMatchObject({ acquired: false })
    expect(await b.release(held)).toBe(true)
    const reader = request(name, 'read')
    tokenOf(await b.tryAcquire(reader))
    expect(await client.type(m)).toBe('hash')
    expect(await b.tryAcquire(request(name))).toMatchObject({ acquired: false })
    expect(await b.release(reader)).toBe(true)
    // The writer's and the fair lock's places in line were kept: drop them so a mutex can go next.
    await client.del(`${m}:line`, `${m}:expiry`)
    tokenOf(await b.tryAcquire(request(name)))
    expect(await client.type(m)).toBe('string')
  })

  it('a release handing the lock to a watcher writes the string; a lease in its lock-delay is not released', async () => {
    const holder = backend()
    const waiter = backend()
    const name = lockName()
    const m = `latchkey:{${name}}`
    const held = request(name)
    const t1 = tokenOf(await holder.tryAcquire(held))
    const wanted = { ...request(name), ttlMs: 40, lockDelayMs: 5_000 }
    const sub = waiter.subscribe(wanted) as RedisReleaseSubscription
    try {
      expect(await waiter.tryAcquire(wanted)).toMatchObject({ acquired: false })
      // Subscribed (the subscription reports it pending once its channels are), so the grant is not missed.
      await eventually('the waiter is subscribed', () => sub.pending)
      sub.pending = false
      expect(await holder.release(held)).toBe(true)
      await eventually('the grant reaches the waiter', () => sub.granted !== undefined)
      const t2 = tokenOf(await waiter.tryAcquire(wanted))
      expect(t2).toBeGreaterThan(t1)
      expect(await client.get(m)).toBe(`${t2}|5000|${wanted.owner}`)
      // The waiter's process saw the lock contended: its release is the full script, which honours the lock-delay.
      await eventually('the lease expired', async () => (await client.pttl(m)) < 4_990)
      expect(await waiter.release(wanted)).toBe(false)
      expect(await client.exists(m)).toBe(1)
      expect(await holder.tryAcquire(request(name))).toMatchObject({ acquired: false })
    } finally {
      sub.close()
    }
  })
})
