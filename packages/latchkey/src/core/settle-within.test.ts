import { type AddressInfo, connect, createServer, type Socket } from 'node:net'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { Backend } from '../backend/types.js'
import { memoryBackend } from '../backends/memory/index.js'
import { BackendUnavailableError } from '../errors.js'
import { countingBackend } from '../testing/counting-backend.js'
import { eventually } from '../testing/eventually.js'
import { monotonicNow } from './clock.js'
import type { LockEvent } from './events.js'
import { LeaseTimers } from './lease-timers.js'
import { createLocks } from './locks.js'
import { settleWithin } from './settle-within.js'

const refedTimeouts = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length

afterEach(() => {
  vi.restoreAllMocks()
})

describe('settleWithin', () => {
  it('an answered call settles "answered" and starts no timer of its own once the clock is armed', async () => {
    const clock = new LeaseTimers(true)
    await settleWithin(clock, monotonicNow() + 30_000, async () => 0)
    const setTimeoutSpy = vi.spyOn(globalThis, 'setTimeout')
    for (let i = 0; i < 50; i++) {
      expect(await settleWithin(clock, monotonicNow() + 30_000, async () => i)).toEqual({ state: 'answered', value: i })
    }
    expect(setTimeoutSpy).not.toHaveBeenCalled()
    clock.close()
  })

  it('a call still out at its deadline settles "unanswered" with the call, and its signal aborts', async () => {
    const clock = new LeaseTimers(true)
    let signal: AbortSignal | undefined
    let answer: (v: string) => void = () => {}
    const outcome = await settleWithin(clock, monotonicNow() + 20, (options) => {
      signal = options.signal
      return new Promise<string>((resolve) => {
        answer = resolve
      })
    })
    expect(outcome.state).toBe('unanswered')
    expect(signal?.aborted).toBe(true)
    expect(signal?.reason).toMatchObject({ name: 'TimeoutError' })
    if (outcome.state === 'unanswered') expect(outcome.abortReason).toBe(signal?.reason)
    answer('late')
    if (outcome.state === 'unanswered') expect(await outcome.pending).toBe('late')
    clock.close()
  })

  it('a failed call settles "failed", also when the backend method throws before returning a promise', async () => {
    const clock = new LeaseTimers(true)
    const error = new Error('boom')
    expect(await settleWithin(clock, monotonicNow() + 1_000, () => Promise.reject(error))).toEqual({
      state: 'failed',
      error,
    })
    expect(
      await settleWithin(clock, monotonicNow() + 1_000, () => {
        throw error
      }),
    ).toEqual({ state: 'failed', error })
    clock.close()
  })

  it('keeps the process alive while a call is out, and not once every call has answered', async () => {
    const clock = new LeaseTimers(true)
    const before = refedTimeouts()
    let answer: () => void = () => {}
    const pending = settleWithin(
      clock,
      monotonicNow() + 60_000,
      () =>
        new Promise<void>((resolve) => {
          answer = resolve
        }),
    )
    expect(refedTimeouts()).toBe(before + 1)
    answer()
    expect((await pending).state).toBe('answered')
    expect(refedTimeouts()).toBe(before)
    clock.close()
  })

  it('an answer that reached the process while it was busy past the deadline wins over the deadline', async () => {
    // The answer is on its way through a real socket before the deadline, but the process is busy until after it:
    // on the next turn both the due timer and the readable socket are ready, and Node runs timers first.
    const server = createServer()
    const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const client = connect((server.address() as AddressInfo).port, '127.0.0.1')
    const far = await accepted
    const clock = new LeaseTimers(true)
    try {
      const outcome = settleWithin(clock, monotonicNow() + 20, async () => {
        const answer = new Promise<string>((resolve) => client.once('data', (data) => resolve(String(data))))
        far.write('held')
        return answer
      })
      const busyUntil = monotonicNow() + 60
      while (monotonicNow() < busyUntil) {
        // a stall: a GC pause or a machine too loaded to run this process
      }
      expect(await outcome).toEqual({ state: 'answered', value: 'held' })
    } finally {
      clock.close()
      client.destroy()
      far.destroy()
      await new Promise((resolve) => server.close(resolve))
    }
  })
})

describe('acquire on the uncontended path', () => {
  it('starts no Node timer per acquire and release', async () => {
    const locks = createLocks({ backend: memoryBackend() })
    await (await locks.mutex('m').acquire()).release()
    const setTimeoutSpy = vi.spyOn(globalThis, 'setTimeout')
    for (let i = 0; i < 50; i++) await (await locks.mutex('m').acquire()).release()
    for (let i = 0; i < 50; i++) await (await locks.mutex('m').acquire({ waitMs: 10_000 })).release()
    // At most a re-arm of the shared clocks for the earlier deadline of the finite wait.
    expect(setTimeoutSpy.mock.calls.length).toBeLessThanOrEqual(2)
    await locks.close()
  })
})

describe('a try abandoned at its deadline', () => {
  it('is told by its signal; a backend that stops with the reason is not reported as a backend error', async () => {
    let left = 0
    const backend: Backend = {
      ...countingBackend(memoryBackend()).backend,
      name: 'hangs-until-aborted',
      // Never answers on its own; rejects with the core's reason once the core gives up on it.
      tryAcquire: (_request, options) =>
        new Promise((_resolve, reject) => {
          options?.signal?.addEventListener('abort', () => reject(options.signal?.reason), { once: true })
        }),
      leaveQueue: async () => {
        left++
      },
    }
    const events: LockEvent[] = []
    const locks = createLocks({ backend, onEvent: (e) => events.push(e) })
    await expect(locks.mutex('m').acquire({ waitMs: 30 })).rejects.toBeInstanceOf(BackendUnavailableError)
    // The waiter leaves the queue once the abandoned try has settled: by then its rejection has been seen.
    await eventually('the waiter left the queue', () => left === 1)
    expect(events.filter((e) => e.type === 'backend-error')).toHaveLength(1)
    await locks.close()
  })
})
