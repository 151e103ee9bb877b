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

  it('rejects what is not a lock', () => {
    const [a] = make()
    expect(() => a.multi('x' as never)).toThrow(TypeError)
    expect(() => a.multi([{}] as never)).toThrow(/locks\[0\]/)
  })
})
