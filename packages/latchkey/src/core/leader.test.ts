import { afterEach, describe, expect, it } from 'vitest'
import type { Backend } from '../backend/types.js'
import { memoryBackend } from '../backends/memory/index.js'
import { LockLostError, LocksClosedError, NotLockHolderError } from '../errors.js'
import { type Latch, latch } from '../testing/eventually.js'
import { flakyBackend } from '../testing/flaky-backend.js'
import type { Leader, LeaderRevoked, LeaderTerm } from './leader-types.js'
import { createLocks, type Locks, type LocksOptions } from './locks.js'

const opened: Locks[] = []
const locksOver = (backend: LocksOptions['backend'], extra: Omit<LocksOptions, 'backend'> = {}) => {
  const locks = createLocks({ backend, ...extra })
  opened.push(locks)
  return locks
}
afterEach(async () => {
  await Promise.all(opened.splice(0).map((l) => l.close()))
})

/** Records a participant's events in order, as `elected:<token>` / `revoked:<reason>:<token>`. */
function record(leader: Leader, log: string[]): void {
  leader.on('elected', (term: LeaderTerm) => log.push(`${leader.id} elected:${term.token}`))
  leader.on('revoked', (r: LeaderRevoked) => log.push(`${leader.id} revoked:${r.reason}:${r.token}`))
}

/** `inner`, with `release` answering only once `gate` opens (after the release took effect). */
function slowReleaseReply(inner: Backend, gate: Latch): Backend {
  return {
    name: inner.name,
    capabilities: inner.capabilities,
    tryAcquire: (...a) => inner.tryAcquire(...a),
    renew: (...a) => inner.renew(...a),
    release: async (...a) => {
      const released = await inner.release(...a)
      await gate.wait()
      return released
    },
    leaveQueue: (...a) => inner.leaveQueue(...a),
    isLocked: (...a) => inner.isLocked(...a),
    forceRelease: (...a) => inner.forceRelease(...a),
    subscribe: (...a) => (inner.subscribe as NonNullable<Backend['subscribe']>)(...a),
    close: () => inner.close(),
  }
}

describe('leader election (memory backend)', () => {
  it('one of several participants leads; close() hands over at once with a higher token and a new signal', async () => {
    // Releases answer only once a successor is elected (a slow reply): a leader that ended its term only after its
    // release answered would still lead when the successor is elected.
    const successorElected = latch()
    const backend = slowReleaseReply(memoryBackend(), successorElected)
    const log: string[] = []
    const leaders = ['a', 'b', 'c'].map((id) => {
      const leader = locksOver(backend).leader('jobs', { id, ttlMs: 60_000 })
      record(leader, log)
      return leader
    })
    const first = await Promise.race(leaders.map((l) => l.elected()))
    const winner = leaders.find((l) => l.id === first.id) as Leader
    expect(leaders.filter((l) => l.isLeader)).toEqual([winner])
    expect(winner.token).toBe(first.token)
    expect(winner.signal).toBe(first.signal)
    expect(winner.term).toBe(first)
    expect(first.signal.aborted).toBe(false)
    const rest = leaders.filter((l) => l !== winner)
    // Whether the old leader still led when a successor was elected: it must have ended its term before releasing.
    const overlapped: boolean[] = []
    for (const l of rest) {
      l.on('elected', () => {
        overlapped.push(winner.isLeader || !first.signal.aborted)
        successorElected.open()
      })
    }
    await winner.close()
    expect(winner.isLeader).toBe(false)
    expect(first.signal.aborted).toBe(true)
    expect(first.signal.reason).toBeInstanceOf(LocksClosedError)
    // The successor is woken by the release (TTL is a minute): elected() resolves long before any expiry.
    const second = await Promise.race(rest.map((l) => l.elected()))
    expect(second.token).toBeGreaterThan(first.token)
    expect(second.signal).not.toBe(first.signal)
    expect(overlapped).toEqual([false])
    expect(log.slice(0, 3)).toEqual([
      `${first.id} elected:${first.token}`,
      `${first.id} revoked:closed:${first.token}`,
      `${second.id} elected:${second.token}`,
    ])
    await Promise.all(rest.map((l) => l.close()))
    expect(await locksOver(backend).mutex('jobs').isLocked()).toBe(false)
  })

  it('a lost lease revokes the term (signal aborts with LockLostError) and the participant contends again', async () => {
    const backend = memoryBackend()
    const log: string[] = []
    const leader = locksOver(backend).leader('lost', { id: 'p', ttlMs: 300 })
    record(leader, log)
    const term = await leader.elected()
    await backend.forceRelease({ key: 'lost', kind: 'mutex' })
    // The next renewal (every ttlMs / 3) finds the lease gone; the next term follows by itself.
    const reason = await new Promise((resolve) =>
      term.signal.addEventListener('abort', () => resolve(term.signal.reason)),
    )
    expect(reason).toBeInstanceOf(LockLostError)
    const next = await leader.elected()
    expect(next.token).toBeGreaterThan(term.token)
    expect(log).toEqual([`p elected:${term.token}`, `p revoked:lost:${term.token}`, `p elected:${next.token}`])
    await leader.close()
    expect(log.at(-1)).toBe(`p revoked:closed:${next.token}`)
  })

  it('a leader that cannot renew loses its term before a successor is elected (never two at once)', async () => {
    const inner = memoryBackend()
    const { backend: flaky, state } = flakyBackend(inner)
    const ttlMs = 150
    const stuck = locksOver(flaky).leader('crash', { id: 'stuck', ttlMs })
    const firstTerm = await stuck.elected()
    const other = locksOver(inner).leader('crash', { id: 'other', ttlMs })
    let stuckLeadsWhenOtherElected: boolean | undefined
    other.on('elected', () => {
      stuckLeadsWhenOtherElected = stuck.isLeader
    })
    const down = performance.now()
    state.down = true
    const next = await other.elected()
    expect(performance.now() - down).toBeLessThan(2 * ttlMs + 1_000)
    expect(firstTerm.signal.aborted).toBe(true)
    expect(stuckLeadsWhenOtherElected).toBe(false)
    expect(next.token).toBeGreaterThan(firstTerm.token)
    state.down = false
    await Promise.all([stuck.close(), other.close()])
  })

  it('signal before the first term is aborted with NotLockHolderError; elected() rejects on close and on abort', async () => {
    const backend = memoryBackend()
    const holder = await locksOver(backend).mutex('idle').acquire()
    const leader = locksOver(backend).leader('idle')
    expect(leader.isLeader).toBe(false)
    expect(leader.token).toBeUndefined()
    expect(leader.signal.aborted).toBe(true)
    expect(leader.signal.reason).toBeInstanceOf(NotLockHolderError)
    const controller = new AbortController()
    const aborted = leader.elected({ signal: controller.signal })
    controller.abort(new Error('gave up'))
    await expect(aborted).rejects.toThrow('gave up')
    const waiting = leader.elected()
    await leader.close()
    await expect(waiting).rejects.toBeInstanceOf(LocksClosedError)
    await expect(leader.elected()).rejects.toBeInstanceOf(LocksClosedError)
    await holder.release()
    // The closed participant left nothing queued: the lock is free.
    expect(await locksOver(backend).mutex('idle').isLocked()).toBe(false)
  })

  it('Locks.close() and options.signal end the term and release the lock', async () => {
    const backend = memoryBackend()
    const locks = locksOver(backend)
    const leader = locks.leader('owned')
    const term = await leader.elected()
    await locks.close()
    expect(term.signal.aborted).toBe(true)
    expect(leader.isLeader).toBe(false)
    expect(await locksOver(backend).mutex('owned').isLocked()).toBe(false)
    const controller = new AbortController()
    const byAbort = locksOver(backend).leader('owned', { signal: controller.signal })
    const t2 = await byAbort.elected()
    controller.abort()
    expect(t2.signal.aborted).toBe(true)
    await byAbort.close()
    expect(await locksOver(backend).mutex('owned').isLocked()).toBe(false)
  })

  it('a listener that throws becomes a warning and the election goes on', async () => {
    const backend = memoryBackend()
    const warnings: string[] = []
    const onWarning = (w: Error): void => {
      warnings.push(w.message)
    }
    process.on('warning', onWarning)
    try {
      const leader = locksOver(backend).leader('throws')
      const never = (): void => undefined
      leader.on('elected', () => {
        throw new Error('listener bug')
      })
      leader.on('revoked', never).off('revoked', never)
      await leader.elected()
      expect(leader.isLeader).toBe(true)
      await leader.close()
      await new Promise((resolve) => setImmediate(resolve))
      expect(warnings.some((w) => w.includes('listener bug'))).toBe(true)
    } finally {
      process.off('warning', onWarning)
    }
  })

  it('an elected listener that closes the participant gets elected then revoked, in that order', async () => {
    const backend = memoryBackend()
    const log: string[] = []
    const leader = locksOver(backend).leader('quits', { id: 'q' })
    record(leader, log)
    leader.on('elected', () => void leader.close())
    const term = await leader.elected()
    await leader.close()
    expect(log).toEqual([`q elected:${term.token}`, `q revoked:closed:${term.token}`])
    expect(await locksOver(backend).mutex('quits').isLocked()).toBe(false)
  })

  it('bad options throw before any I/O', async () => {
    const leader = locksOver(memoryBackend()).leader('checked')
    expect(() => leader.elected({ signal: 'no' as never })).toThrow(TypeError)
    await leader.close()
    const locks = locksOver(memoryBackend())
    expect(() => locks.leader('')).toThrow(RangeError)
    expect(() => locks.leader('x', { id: 5 as never })).toThrow(TypeError)
    expect(() => locks.leader('x', { ttlMs: -1 })).toThrow(RangeError)
    expect(() => locks.leader('x', { signal: 'no' as never })).toThrow(TypeError)
    expect(() => locks.leader('x', 'no' as never)).toThrow(TypeError)
  })
})
