import { getEventListeners } from 'node:events'
import { describe, expect, it } from 'vitest'
import { WakeSubscription } from './local-notifier.js'

describe('WakeableSubscription (through WakeSubscription)', () => {
  it("keeps one abort listener on a wait's signal across waits, and removes it on close", async () => {
    const controller = new AbortController()
    const sub = new WakeSubscription()
    const first = sub.wait(10_000, controller.signal)
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1)
    sub.fire()
    await first
    // The listener stays between waits (its removal and re-adding cost every wake-up) and is not added twice.
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1)
    const second = sub.wait(10_000, controller.signal)
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1)
    sub.fire()
    await second
    sub.close()
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
  })

  it('rejects a pending wait with the reason of its signal, and only that wait', async () => {
    const controller = new AbortController()
    const sub = new WakeSubscription()
    await sub.wait(1, controller.signal) // a poll interval ran out: resolved, not rejected
    const pending = sub.wait(10_000, controller.signal)
    const reason = new Error('caller gave up')
    controller.abort(reason)
    await expect(pending).rejects.toBe(reason)
    // A later wait on the aborted signal rejects at once; a wait on another signal is not touched by it.
    await expect(sub.wait(10_000, controller.signal)).rejects.toBe(reason)
    const other = new AbortController()
    const unaffected = sub.wait(10_000, other.signal)
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
    sub.fire()
    await unaffected
    sub.close()
    expect(getEventListeners(other.signal, 'abort')).toHaveLength(0)
  })
})
