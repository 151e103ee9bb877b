/**
 * A step of this process's wall clock (NTP, an operator, a VM resumed from a snapshot) must not touch a lease:
 * latchkey times a lease on the monotonic clock, and the lock server keeps its own time. The safety lab's T17
 * runs step a client's clock by an hour under libfaketime on every networked backend; this is the same check in
 * the normal suite, on the shared Redis: with the process's Date.now an hour ahead, then an hour behind, a held
 * lease keeps renewing, its signal does not abort, and it releases normally.
 */
import { randomUUID } from 'node:crypto'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { Backend } from '../src/backend/types.js'
import type { LockEvent } from '../src/core/events.js'
import { createLocks, type Locks } from '../src/core/locks.js'
import { eventually } from '../src/testing/eventually.js'
import { createIoredisBackend } from './support/redis-backend-module.js'

const opened: { locks: Locks; backend: Backend }[] = []
afterEach(async () => {
  vi.restoreAllMocks()
  for (const { locks, backend } of opened.splice(0)) {
    await locks.close()
    await backend.close()
  }
})

/** Moves this process's wall clock (Date.now and new Date()) by `offsetMs` from the real one. */
function stepWallClock(offsetMs: number): void {
  const realNow = Date.now.bind(Date)
  vi.restoreAllMocks()
  vi.spyOn(Date, 'now').mockImplementation(() => realNow() + offsetMs)
}

describe('a wall-clock step of the holder process', () => {
  it('leaves a held Redis lease renewing and valid, an hour forward and an hour back', async () => {
    const backend = createIoredisBackend()
    let renewals = 0
    const locks = createLocks({
      backend,
      namespace: `wall-clock-${randomUUID()}`,
      ttlMs: 600,
      onEvent: (event: LockEvent) => {
        if (event.type === 'renewed') renewals++
      },
    })
    opened.push({ locks, backend })
    const lease = await locks.mutex('job').acquire()

    stepWallClock(3_600_000)
    const before = renewals
    // Three renewals at TTL/3 span a whole TTL: a lease timed on Date.now would have ended an hour ago.
    await eventually('three renewals with the clock an hour ahead', () => renewals >= before + 3, 5_000)
    expect(lease.signal.aborted).toBe(false)

    stepWallClock(-3_600_000)
    const middle = renewals
    await eventually('three renewals with the clock an hour behind', () => renewals >= middle + 3, 5_000)
    expect(lease.signal.aborted).toBe(false)

    // A lease the server had dropped would refuse the release (NotLockHolderError).
    await expect(lease.release()).resolves.toBeUndefined()
  })
})
