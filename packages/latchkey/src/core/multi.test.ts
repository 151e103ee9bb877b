import { afterEach, describe, expect, it } from 'vitest'
import { memoryBackend } from '../backends/memory/index.js'
import { LockLostError, LockTimeoutError } from '../errors.js'
import { createLocks, type Locks } from './locks.js'
import { MultiLease } from './multi.js'

const opened: Locks[] = []
const make = () => {
  const backend = memoryBackend()
  const pair = [createLocks({ backend }), createLocks({ backend })] as const
  opened.push(...pair)
  return pair
}
afterEach(async () => {
  await Promise.all(opened.splice(0).map((l) => l.close()))
})

describe('multi', () => {
  it('spans backends, flattens nested multi-locks and drops duplicates', async () => {
    const [a] = make()
    const [other] = make()
    const inner = a.multi([a.mutex('x'), a.mutex('y')])
    const all = a.multi([inner, other.mutex('z'), a.mutex('x')])
    expect(all.name).toBe('x+y+z')
    const lease = (await all.acquire()) as MultiLease
    expect(lease).toBeInstanceOf(MultiLease)
    expect(lease.leases).toHaveLength(3)
    expect(lease.token).toBe(lease.leases.reduce((m, l) => (l.token > m ? l.token : m), 0n))
    // expiresAt is derived from the monotonic clock at each read: allow a millisecond of wall-clock jitter.
    expect(Math.abs(lease.expiresAt - Math.min(...lease.leases.map((l) => l.expiresAt)))).toBeLessThan(2)
    await lease.extend(60_000)
    expect(await all.isLocked()).toBe(true)
    await lease[Symbol.asyncDispose]()
    expect(await all.isLocked()).toBe(false)
  })

  it('a timed-out wait releases the parts already taken', async () => {
    const [a, b] = make()
    const blocker = await b.mutex('q').acquire()
    await expect(a.multi([a.mutex('p'), a.mutex('q')]).acquire({ waitMs: 50 })).rejects.toBeInstanceOf(LockTimeoutError)
    expect(await b.mutex('p').isLocked()).toBe(false)
    await blocker.release()
  })

  it('its signal aborts when any part is lost; nested withLock re-enters every part', async () => {
    const [a] = make()
    const multi = a.multi([a.mutex('m1'), a.mutex('m2')])
    await multi.withLock(async (lease) => {
      await a.mutex('m2').withLock(async (inner) => {
        expect(inner.token).toBe((lease as MultiLease).leases[1]?.token)
      })
    })
    const lease = await multi.acquire({ ttlMs: 50, autoRenew: false })
    await new Promise((resolve) => lease.signal.addEventListener('abort', resolve))
    expect(lease.signal.reason).toBeInstanceOf(LockLostError)
  })

  it('one name twice: a write covers a read of the same Locks; what would wait for itself is refused up front', async () => {
    const [a, b] = make()
    const rw = a.readWrite('rw')
    const both = a.multi([rw.read, rw.write])
    const lease = (await both.acquire({ waitMs: 1_000 })) as MultiLease
    expect(lease.leases).toHaveLength(1)
    expect(await b.readWrite('rw').read.tryAcquire()).toBeUndefined()
    // Inside withLock the dropped read re-enters the write it was folded into.
    await lease.release()
    await both.withLock(async () => {
      await rw.read.withLock(async (inner) => expect(inner.token).toBeGreaterThan(0n))
    })
    expect(() => a.multi([a.mutex('m'), a.multi([a.readWrite('m').read])])).toThrow(
      /locks\[0\] \(mutex "m"\) and locks\[1\] \(read lock "m"\) cannot be held together/,
    )
    expect(() => a.multi([a.fairMutex('f'), a.mutex('f')])).toThrow(RangeError)
    expect(() => a.multi([a.mutex('x'), b.mutex('x')])).toThrow(/two Locks instances over one backend/)
    const reads = await a.multi([a.readWrite('r').read, b.readWrite('r').read]).acquire({ waitMs: 1_000 })
    await reads.release()
    const permits = await a
      .multi([a.semaphore('s', { permits: 2 }), b.semaphore('s', { permits: 2 })])
      .acquire({ waitMs: 1_000 })
    expect(await a.semaphore('s', { permits: 2 }).isLocked()).toBe(true)
    await permits.release()
    expect(() => a.multi([a.semaphore('t', { permits: 1 }), b.semaphore('t', { permits: 1 })])).toThrow(RangeError)
  })

  it('rejects what is not a lock', () => {
    const [a] = make()
    expect(() => a.multi('x' as never)).toThrow(TypeError)
    expect(() => a.multi([{}] as never)).toThrow(/locks\[0\]/)
  })
})
