/**
 * `waitMs` and `unavailableMs` are hard deadlines, whatever the backend does: an in-flight try is raced against
 * them, not awaited. A backend that fails or hangs is reported as `BackendUnavailableError` (never as a holder
 * that does not exist), a late grant of an abandoned try is given back. Over the memory backend wrapped by
 * `flakyBackend` (outages injected in-process); the same against a real stopped Redis is in redis-deadline.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { memoryBackend } from '../src/backends/memory/index.js'
import { createLocks, type Locks } from '../src/core/locks.js'
import { BackendUnavailableError, LockTimeoutError } from '../src/errors.js'
import { eventually } from './support/eventually.js'
import { flakyBackend } from './support/flaky-backend.js'
import { timed } from './support/timed.js'

const opened: Locks[] = []
const cleanups: (() => void)[] = []
afterEach(async () => {
  for (const undo of cleanups.splice(0)) undo()
  await Promise.all(opened.splice(0).map((l) => l.close()))
})

function setup(options: { unavailableMs?: number } = {}) {
  const inner = memoryBackend()
  const { backend, state } = flakyBackend(inner)
  cleanups.push(() => state.resume())
  const locks = createLocks({ backend, ...options })
  const direct = createLocks({ backend: inner })
  opened.push(locks, direct)
  return { locks, direct, state }
}

describe('waitMs is a hard deadline', () => {
  it('a hanging backend: rejects at waitMs with BackendUnavailableError, then gives the late grant back', async () => {
    const { locks, direct, state } = setup()
    state.hang()
    const { error, ms } = await timed(() => locks.mutex('hang').acquire({ waitMs: 200 }))
    expect(ms).toBeGreaterThanOrEqual(195)
    expect(ms).toBeLessThan(200 + 100)
    expect(error).toBeInstanceOf(BackendUnavailableError)
    expect((error as Error).message).toMatch(/did not answer before waitMs \(200 ms\)/)
    expect((error as Error).message).not.toMatch(/find the holder/)
    expect(String(((error as Error).cause as Error).message)).toMatch(/has not answered/)
    // The try answers now and is granted: nobody waits for that lease, so it is released and the waiter leaves.
    state.resume()
    await eventually('the late grant given back', async () => state.calls.includes('leaveQueue'))
    expect(state.calls).toContain('release')
    expect(await direct.mutex('hang').isLocked()).toBe(false)
  })

  it('a failing backend: the wait ends at waitMs with BackendUnavailableError caused by the last backend error', async () => {
    const { locks, state } = setup()
    state.down = true
    const { error, ms } = await timed(() => locks.mutex('down').acquire({ waitMs: 300 }))
    expect(ms).toBeLessThan(300 + 100)
    expect(error).toBeInstanceOf(BackendUnavailableError)
    expect((error as Error).message).toMatch(/unreachable until waitMs \(300 ms\)/)
    expect((error as Error).cause).toBeInstanceOf(BackendUnavailableError)
    expect(((error as Error).cause as Error).message).toMatch(/server down \(test\)/)
  })

  it('a backend that answered "held" and then stops answering: BackendUnavailableError at waitMs', async () => {
    const { locks, direct, state } = setup()
    const holder = await direct.mutex('then-hang').acquire()
    const started = performance.now()
    const pending = timed(() => locks.mutex('then-hang').acquire({ waitMs: 400 }))
    await eventually('the first try answered', () => state.calls.includes('tryAcquire'))
    state.hang()
    // The release wakes the waiter (memory pushes releases), whose next try hangs.
    await holder.release()
    const { error } = await pending
    expect(performance.now() - started).toBeLessThan(400 + 100)
    expect(error).toBeInstanceOf(BackendUnavailableError)
    expect((error as Error).message).toMatch(/did not answer before waitMs \(400 ms\)/)
    state.resume()
    await eventually('the late grant given back', () => state.calls.includes('leaveQueue'))
    expect(await direct.mutex('then-hang').isLocked()).toBe(false)
  })

  it('a backend that answers "held" still ends the wait with LockTimeoutError', async () => {
    const { locks, direct } = setup()
    const holder = await direct.mutex('held').acquire()
    const { error, ms } = await timed(() => locks.mutex('held').acquire({ waitMs: 150 }))
    expect(error).toBeInstanceOf(LockTimeoutError)
    expect(ms).toBeLessThan(150 + 100)
    await holder.release()
  })
})

describe('unavailableMs', () => {
  it('an infinite wait on a failing backend rejects after unavailableMs with BackendUnavailableError', async () => {
    const { locks, state } = setup({ unavailableMs: 250 })
    state.down = true
    const { error, ms } = await timed(() => locks.mutex('silent').acquire())
    expect(ms).toBeGreaterThanOrEqual(245)
    expect(ms).toBeLessThan(250 + 150)
    expect(error).toBeInstanceOf(BackendUnavailableError)
    expect((error as Error).message).toMatch(/unavailableMs \(250 ms\)/)
    expect((error as Error).cause).toBeInstanceOf(BackendUnavailableError)
  })

  it('per call, and against a hanging backend too; a fair waiter that leaves is taken out of line', async () => {
    const { locks, direct, state } = setup({ unavailableMs: 60_000 })
    state.hang()
    const { error, ms } = await timed(() => locks.fairMutex('hung').acquire({ waitMs: Infinity, unavailableMs: 200 }))
    expect(ms).toBeLessThan(200 + 100)
    expect(error).toBeInstanceOf(BackendUnavailableError)
    expect((error as Error).message).toMatch(/did not answer before unavailableMs \(200 ms\)/)
    state.resume()
    await eventually('the abandoned waiter left the line', async () => state.calls.includes('leaveQueue'))
    const next = await direct.fairMutex('hung').tryAcquire()
    expect(next).toBeDefined()
    await next?.release()
  })

  it('a backend that keeps answering "held" is waited for beyond unavailableMs', async () => {
    const { locks, direct, state } = setup({ unavailableMs: 100 })
    const holder = await direct.mutex('busy').acquire()
    const started = performance.now()
    const pending = locks.mutex('busy').acquire({ waitMs: 5_000 })
    let settled = false
    void pending.then(
      () => (settled = true),
      () => (settled = true),
    )
    const tries = () => state.calls.filter((c) => c === 'tryAcquire').length
    await eventually(
      'tries answered "held" for 3 x unavailableMs',
      () => performance.now() - started > 300 && tries() >= 1,
    )
    expect(settled).toBe(false)
    await holder.release()
    const lease = await pending
    await lease.release()
  })

  it('is validated like the other durations, before any I/O', async () => {
    const { locks, state } = setup()
    expect(() => createLocks({ backend: memoryBackend(), unavailableMs: 0 })).toThrow(/unavailableMs.*0/)
    expect(() => createLocks({ backend: memoryBackend(), unavailableMs: 'x' as never })).toThrow(TypeError)
    await expect(locks.mutex('v').acquire({ unavailableMs: Number.NaN })).rejects.toThrow(RangeError)
    await expect(locks.mutex('v').acquire({ unavailableMs: -1 })).rejects.toThrow(/unavailableMs.*-1/)
    expect(state.calls).toEqual([])
  })
})
