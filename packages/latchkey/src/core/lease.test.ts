import { afterEach, describe, expect, it, vi } from 'vitest'
import { memoryBackend } from '../backends/memory/index.js'
import { BackendUnavailableError, LockLostError, NotLockHolderError } from '../errors.js'
import { eventually } from '../testing/eventually.js'
import { flakyBackend } from '../testing/flaky-backend.js'
import type { LockEvent } from './events.js'
import { createLocks, type Locks } from './locks.js'

const opened: Locks[] = []
function setup(onEvent?: (e: LockEvent) => void) {
  const { backend, state } = flakyBackend(memoryBackend())
  const locks = createLocks({ backend, ttlMs: 90, ...(onEvent ? { onEvent } : {}) })
  opened.push(locks)
  return { locks, state }
}
afterEach(async () => {
  await Promise.all(opened.splice(0).map((l) => l.close()))
})

describe('lease watchdog', () => {
  it('keeps retrying renewals through a short outage and keeps the lease', async () => {
    const events: string[] = []
    const { locks, state } = setup((e) => events.push(e.type))
    const lease = await locks.mutex('a').acquire({ ttlMs: 300 })
    state.down = true
    await eventually('a renewal failed', () => events.includes('renew-failed'))
    state.down = false
    await eventually(
      'a renewal got through after the outage',
      () => events.lastIndexOf('renewed') > events.lastIndexOf('renew-failed'),
    )
    expect(lease.signal.aborted).toBe(false)
    await lease.release()
  })

  it('aborts lease.signal no later than the expiry when renewals cannot get through (fake clock)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] })
    try {
      const lost: LockEvent[] = []
      const { locks, state } = setup((e) => e.type === 'lost' && lost.push(e))
      const lease = await locks.mutex('b').acquire({ ttlMs: 150 })
      state.down = true
      await vi.advanceTimersByTimeAsync(140)
      expect(lease.signal.aborted).toBe(false)
      await vi.advanceTimersByTimeAsync(10)
      expect(lease.signal.aborted).toBe(true)
      expect(lease.signal.reason).toBeInstanceOf(LockLostError)
      expect((lease.signal.reason as Error).message).toContain('could not be renewed')
      expect(lost).toHaveLength(1)
      state.down = false
      // The server's entry expired too; releasing says we were not the holder any more.
      await expect(lease.release()).rejects.toBeInstanceOf(NotLockHolderError)
    } finally {
      vi.useRealTimers()
    }
  })

  it('a lease looked at after its deadline is lost, before its watchdog timer ran (an event loop that stalled)', async () => {
    const lost: LockEvent[] = []
    const { locks } = setup((e) => e.type === 'lost' && lost.push(e))
    const lease = await locks.mutex('stall').acquire({ ttlMs: 50, autoRenew: false })
    expect(lease.signal.aborted).toBe(false)
    // The process is busy past the deadline (the duration under test): no timer runs meanwhile.
    const until = performance.now() + 60
    while (performance.now() < until) {
      // spin
    }
    expect(lease.signal.aborted).toBe(true)
    expect((lease.signal.reason as Error).message).toContain('expired (autoRenew is off)')
    expect(lost).toHaveLength(1)
    await expect(lease.release()).rejects.toBeInstanceOf(NotLockHolderError)
  })

  it('release failing on the server rejects with the backend error and reports release-failed', async () => {
    const events: string[] = []
    const { locks, state } = setup((e) => events.push(e.type))
    const lease = await locks.mutex('c').acquire()
    state.down = true
    await expect(lease.release()).rejects.toBeInstanceOf(BackendUnavailableError)
    expect(events).toContain('release-failed')
    state.down = false
  })

  it('extend rejects on a lost lease and when the server says no', async () => {
    const { locks } = setup()
    const lease = await locks.mutex('d').acquire({ ttlMs: 60, autoRenew: false })
    await eventually('the unrenewed lease expired', () => lease.signal.aborted)
    await expect(lease.extend()).rejects.toBeInstanceOf(NotLockHolderError)
    const other = await locks.mutex('e').acquire({ autoRenew: false })
    await locks.backend.forceRelease({ key: 'e', kind: 'mutex' })
    await expect(other.extend(500)).rejects.toBeInstanceOf(NotLockHolderError)
    expect(other.signal.reason).toBeInstanceOf(LockLostError)
  })

  it('an onEvent handler that throws becomes a process warning, never a lock failure', async () => {
    const warnings: string[] = []
    const onWarning = (w: Error) => warnings.push(w.message)
    process.on('warning', onWarning)
    try {
      const { locks } = setup(() => {
        throw new Error('handler bug')
      })
      await locks.mutex('f').withLock(() => 1)
      await eventually('the handler error became a warning', () => warnings.some((w) => w.includes('handler bug')))
    } finally {
      process.off('warning', onWarning)
    }
  })

  it('withLock returns the callback result when the lease was lost mid-callback, reporting lost and release-failed', async () => {
    const events: LockEvent[] = []
    const { locks } = setup((e) => events.push(e))
    const result = await locks.mutex('g').withLock(async (lease) => {
      await locks.backend.forceRelease({ key: 'g', kind: 'mutex' })
      await new Promise((resolve) => lease.signal.addEventListener('abort', resolve))
      return 'done'
    })
    expect(result).toBe('done')
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['lost', 'release-failed']))
    const failed = events.find((e) => e.type === 'release-failed')
    expect(failed?.type === 'release-failed' && failed.error).toBeInstanceOf(NotLockHolderError)
  })

  it('withLock returns the callback result when the release fails after the callback committed', async () => {
    const events: LockEvent[] = []
    const { locks, state } = setup((e) => events.push(e))
    const result = await locks.mutex('h').withLock(async () => {
      state.down = true // the backend goes away between the commit and the release
      return 'committed'
    })
    state.down = false
    expect(result).toBe('committed')
    const failed = events.find((e) => e.type === 'release-failed')
    expect(failed?.type === 'release-failed' && failed.error).toBeInstanceOf(BackendUnavailableError)
  })

  it('withLock rethrows the callback error, not a release failure after it', async () => {
    const { locks, state } = setup()
    const boom = new Error('callback failed')
    const error = await locks
      .mutex('i')
      .withLock(async () => {
        state.down = true
        throw boom
      })
      .catch((e: unknown) => e)
    state.down = false
    expect(error).toBe(boom)
  })
})
