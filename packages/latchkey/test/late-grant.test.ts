/**
 * A grant whose answer arrives after the lease it grants has ended (a reply held up in the network longer than
 * the TTL, found by the safety lab's T5 run on Redis) is not a lock: the server may already have expired it and
 * granted the lock to someone else. The core gives it back and keeps waiting, instead of returning a lease whose
 * signal aborts at once after the caller was told it holds the lock.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { AcquireResult, Backend } from '../src/backend/types.js'
import { memoryBackend } from '../src/backends/memory/index.js'
import type { Lease } from '../src/core/lease.js'
import { createLocks, type Locks } from '../src/core/locks.js'
import { eventually, latch } from '../src/testing/eventually.js'

const opened: Locks[] = []
afterEach(async () => {
  await Promise.all(opened.splice(0).map((l) => l.close()))
})

/** The memory backend, with the answer of the first try held until `answer` opens (the grant itself is made at once). */
function replyHeldBackend(inner: Backend) {
  const answer = latch()
  const calls: string[] = []
  let held = false
  const backend: Backend = Object.create(inner)
  backend.tryAcquire = async (request, options): Promise<AcquireResult> => {
    calls.push('tryAcquire')
    const result = await inner.tryAcquire(request, options)
    if (!held) {
      held = true
      await answer.wait()
    }
    return result
  }
  backend.release = async (request) => {
    calls.push('release')
    return inner.release(request)
  }
  return { backend, answer, calls }
}

describe('a late grant', () => {
  it('is given back and the wait goes on, while the successor that took the expired lock keeps it', async () => {
    const inner = memoryBackend()
    const { backend, answer, calls } = replyHeldBackend(inner)
    const late = createLocks({ backend })
    const other = createLocks({ backend: inner })
    opened.push(late, other)

    let settled = false
    const waiting = late
      .mutex('late-grant')
      .acquire({ ttlMs: 100, waitMs: 10_000 })
      .finally(() => {
        settled = true
      })
    // The first try was granted on the server and its answer is in flight; the lease expires there meanwhile
    // and another client takes the lock.
    let successor: Lease | undefined
    await eventually('the expired grant taken by another client', async () => {
      successor = await other.mutex('late-grant').tryAcquire({ ttlMs: 10_000 })
      return successor !== undefined
    })
    if (successor === undefined) throw new Error('unreachable')
    answer.open()
    await eventually(
      'the late grant given back and the wait resumed',
      () => calls.filter((c) => c === 'tryAcquire').length >= 2,
    )
    expect(calls).toContain('release')
    expect(settled).toBe(false)
    expect(await other.mutex('late-grant').isLocked()).toBe(true)

    await successor.release()
    const lease = await waiting
    expect(lease.signal.aborted).toBe(false)
    expect(lease.token).toBeGreaterThan(successor.token)
    await lease.release()
  })
})
