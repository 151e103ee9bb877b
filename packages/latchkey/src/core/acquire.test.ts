import { afterEach, describe, expect, it } from 'vitest'
import type { Backend } from '../backend/types.js'
import { memoryBackend } from '../backends/memory/index.js'
import { BackendUnavailableError, LockTimeoutError, UnsupportedError } from '../errors.js'
import { eventually } from '../testing/eventually.js'
import { flakyBackend } from '../testing/flaky-backend.js'
import { createLocks, type Locks } from './locks.js'

const opened: Locks[] = []
const track = (locks: Locks) => {
  opened.push(locks)
  return locks
}
afterEach(async () => {
  await Promise.all(opened.splice(0).map((l) => l.close()))
})

describe('acquisition loop', () => {
  it('tryAcquire surfaces BackendUnavailableError; a waiting acquire keeps trying until the server is back', async () => {
    const { backend, state } = flakyBackend(memoryBackend())
    const events: string[] = []
    const locks = track(createLocks({ backend, onEvent: (e) => events.push(e.type) }))
    state.down = true
    await expect(locks.mutex('a').tryAcquire()).rejects.toBeInstanceOf(BackendUnavailableError)
    const waiting = locks.mutex('a').acquire({ waitMs: 5_000 })
    await eventually(
      'the waiter tried again after a failed try',
      () => events.filter((e) => e === 'backend-error').length >= 2,
    )
    state.down = false
    const lease = await waiting
    expect(events).toContain('backend-error')
    await lease.release()
  })

  it('a wait that runs out during an outage is a BackendUnavailableError caused by the backend error', async () => {
    const { backend, state } = flakyBackend(memoryBackend())
    const locks = track(createLocks({ backend }))
    state.down = true
    const error = await locks
      .mutex('b')
      .acquire({ waitMs: 100 })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(BackendUnavailableError)
    expect((error as Error).cause).toBeInstanceOf(BackendUnavailableError)
    state.down = false
  })

  it('a try sent just before the wait ends and slow to answer, after "held": LockTimeoutError, not an outage', async () => {
    // The backend answers "held" at once, with a hint that sends the next try 10 ms before waitMs runs out; that
    // one takes 40 ms to answer (a loaded machine). It answered all along: the holder is why the wait failed.
    const { backend } = flakyBackend(memoryBackend())
    const waitMs = 200
    let started = 0
    let tries = 0
    backend.tryAcquire = async () => {
      tries++
      const retryAfterMs = Math.max(1, Math.round(started + waitMs - 10 - performance.now()))
      if (tries > 1) await new Promise((resolve) => setTimeout(resolve, 40))
      return { acquired: false, retryAfterMs }
    }
    const locks = track(createLocks({ backend }))
    started = performance.now()
    const error = await locks
      .mutex('slow-last-try')
      .acquire({ waitMs })
      .catch((e: unknown) => e)
    expect(tries).toBe(2)
    expect(error).toBeInstanceOf(LockTimeoutError)
  })

  it('an abort during an in-flight grant releases the late grant before rejecting', async () => {
    const { backend, state } = flakyBackend(memoryBackend())
    const locks = track(createLocks({ backend }))
    state.hang()
    const controller = new AbortController()
    const pending = locks.mutex('c').acquire({ signal: controller.signal })
    await eventually('the try is in flight', () => state.calls.includes('tryAcquire'))
    controller.abort(new Error('stop'))
    // The grant lands after the abort.
    state.resume()
    await expect(pending).rejects.toThrow('stop')
    expect(await locks.mutex('c').isLocked()).toBe(false)
  })

  it('polls with backoff when the backend pushes nothing, bounded by the holder lease', async () => {
    const inner = memoryBackend()
    let refusals = 0
    const polling: Backend = {
      ...inner,
      name: 'polling',
      capabilities: { ...inner.capabilities, notifications: 'none' },
      tryAcquire: async (r) => {
        const result = await inner.tryAcquire(r)
        if (!result.acquired) refusals++
        return result
      },
      renew: (r) => inner.renew(r),
      release: (r) => inner.release(r),
      leaveQueue: (r) => inner.leaveQueue(r),
      isLocked: (r) => inner.isLocked(r),
      forceRelease: (r) => inner.forceRelease(r),
      close: () => inner.close(),
    }
    delete (polling as { subscribe?: unknown }).subscribe
    const locks = track(createLocks({ backend: polling, maxPollMs: 20 }))
    const held = await locks.mutex('d').acquire()
    const waiting = locks.mutex('d').acquire({ waitMs: 2_000 })
    // Released only once the waiter found it held: from then on nothing but its polling can find it free.
    await eventually('the waiter was refused once', () => refusals >= 1)
    await held.release()
    const lease = await waiting
    await lease.release()
    const fair = await locks.fairMutex('e').acquire({ ttlMs: 80, autoRenew: false })
    const next = await locks.fairMutex('e').acquire({ waitMs: 2_000 })
    expect(fair.signal.aborted).toBe(true)
    await next.release()
  })

  it('refuses at construction what the backend cannot do', () => {
    const inner = memoryBackend()
    const limited = {
      ...inner,
      tryAcquire: inner.tryAcquire.bind(inner),
      renew: inner.renew.bind(inner),
      release: inner.release.bind(inner),
      leaveQueue: inner.leaveQueue.bind(inner),
      isLocked: inner.isLocked.bind(inner),
      forceRelease: inner.forceRelease.bind(inner),
      close: inner.close.bind(inner),
      name: 'limited',
      capabilities: { ...inner.capabilities, fencing: 'none', lockDelay: false, kinds: ['mutex'] },
    } as Backend
    expect(() => createLocks({ backend: limited, requireFencing: true })).toThrow(UnsupportedError)
    expect(() => createLocks({ backend: limited, lockDelayMs: 10 })).toThrow(UnsupportedError)
    const locks = track(createLocks({ backend: limited }))
    expect(() => locks.semaphore('s', { permits: 2 })).toThrow(UnsupportedError)
    expect(() => locks.readWrite('rw')).toThrow(/read locks/)
  })

  it('close() is idempotent and leaves the backend usable for other instances', async () => {
    const backend = memoryBackend()
    const a = createLocks({ backend })
    await a.mutex('x').acquire()
    await Promise.all([a.close(), a.close()])
    const b = track(createLocks({ backend }))
    const lease = await b.mutex('x').tryAcquire()
    expect(lease).toBeDefined()
  })
})
