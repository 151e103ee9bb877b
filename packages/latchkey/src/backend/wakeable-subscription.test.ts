import { getEventListeners } from 'node:events'
import { describe, expect, it } from 'vitest'
import { WakeSubscription } from './local-notifier.js'

/** The abort listeners on `signal`. */
const listeners = (signal: AbortSignal): number => getEventListeners(signal, 'abort').length

/** One wait on `signal` ended by a wake-up; the listeners on `signal` while it was pending. */
async function wokenWait(sub: WakeSubscription, signal: AbortSignal): Promise<number> {
  const wait = sub.wait(10_000, signal)
  const during = listeners(signal)
  sub.fire()
  await wait
  return during
}

describe('WakeableSubscription (through WakeSubscription)', () => {
  it("keeps one abort listener on a wait's signal across waits, and removes it on close", async () => {
    const { signal } = new AbortController()
    const sub = new WakeSubscription()
    expect(await wokenWait(sub, signal)).toBe(1)
    // The listener stays between waits (its removal and re-adding cost every wake-up) and is not added twice.
    expect(listeners(signal)).toBe(1)
    expect(await wokenWait(sub, signal)).toBe(1)
    sub.close()
    expect(listeners(signal)).toBe(0)
  })

  it('rejects a pending wait with the reason of its signal, and only that wait', async () => {
    const controller = new AbortController()
    const sub = new WakeSubscription()
    await sub.wait(1, controller.signal) // a poll interval ran out: resolved, not rejected
    const pending = sub.wait(10_000, controller.signal)
    const reason = new Error('caller gave up')
    controller.abort(reason)
    await expect(pending).rejects.toBe(reason)
    // A later wait on the aborted signal rejects at once; a wait on another signal is not touched by it, and takes
    // the listener off the aborted one.
    await expect(sub.wait(10_000, controller.signal)).rejects.toBe(reason)
    const other = new AbortController().signal
    expect(await wokenWait(sub, other)).toBe(1)
    expect(listeners(controller.signal)).toBe(0)
    sub.close()
    expect(listeners(other)).toBe(0)
  })
})
