import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { LockKind, ReleaseSubscription } from '../../backend/types.js'
import type { LiveSummary } from './sql-table-grant.js'
import { TablePoller } from './table-poller.js'

const HELD: LiveSummary = { n: 1, firstFree: 60_000, lastFree: 60_000, mine: false, now: 1_000, permits: 0 }
const FREE: LiveSummary = { n: 0, firstFree: 0, lastFree: 0, mine: false, now: 1_000, permits: 0 }

/** A poller over a scripted holder table that counts its reads. */
function scripted(initial: LiveSummary) {
  const state = { live: initial, reads: 0, fail: false }
  const poller = new TablePoller(async () => {
    state.reads++
    if (state.fail) throw new Error('connection refused')
    return state.live
  })
  return { state, poller }
}

/** `n` subscriptions of kind `kind` on `key`, each blocked in a wait of `waitMs`, and which of them woke. */
function waiters(poller: TablePoller, n: number, kind: LockKind, waitMs = 60_000) {
  const subs: ReleaseSubscription[] = Array.from({ length: n }, () => poller.subscribe('k', kind))
  const woken = new Set<number>()
  const waits = subs.map((s, i) => s.wait(waitMs).then(() => woken.add(i)))
  return { subs, woken, waits }
}

describe('TablePoller', () => {
  beforeEach(() => {
    vi.useFakeTimers()
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('reads a held lock once per interval for all its waiters, backing off while nothing changes', async () => {
    const { state, poller } = scripted(HELD)
    const { subs, woken } = waiters(poller, 250, 'mutex')
    await vi.advanceTimersByTimeAsync(1_000)
    // Every 2 ms, then a quarter of the time since the last change, then every 100 ms: about 30 reads in a
    // second for 250 waiters (each polling on its own, at least 2,500).
    expect(state.reads).toBeGreaterThan(5)
    expect(state.reads).toBeLessThan(40)
    expect(woken.size).toBe(0)
    for (const s of subs) s.close()
    expect(poller.size).toBe(0)
  })

  it('wakes exactly one mutex waiter, the oldest, when the lock is free, and no second one while it tries', async () => {
    const { state, poller } = scripted(HELD)
    const { subs, woken } = waiters(poller, 20, 'mutex')
    await vi.advanceTimersByTimeAsync(10)
    state.live = FREE
    await vi.advanceTimersByTimeAsync(50)
    // The woken waiter has not come back to wait nor closed: its try is in flight, no one else is woken.
    expect([...woken]).toEqual([0])
    // Its try may skip the read the poll has just made, once.
    expect(poller.sawFree('k')).toBe(true)
    expect(poller.sawFree('k')).toBe(false)
    // It lost the race to another process and waits again; the lock is free again, and it is still the oldest.
    let again = false
    void subs[0]?.wait(60_000).then(() => {
      again = true
    })
    await vi.advanceTimersByTimeAsync(50)
    expect(again).toBe(true)
    expect(woken.size).toBe(1)
    for (const s of subs) s.close()
  })

  it('wakes one waiter per free slot of a semaphore, and every fair waiter when the holders change', async () => {
    const { state, poller } = scripted({ ...HELD, n: 3, permits: 5 })
    const sem = waiters(poller, 10, 'semaphore')
    await vi.advanceTimersByTimeAsync(20)
    expect(sem.woken.size).toBe(2)
    for (const s of sem.subs) s.close()

    state.live = HELD
    const fair = waiters(poller, 10, 'fair')
    await vi.advanceTimersByTimeAsync(20)
    // The first read is a change (nothing seen before): fair waiters decide their turn in their own tries.
    expect(fair.woken.size).toBe(10)
    for (const s of fair.subs) s.close()
  })

  it('a release in this process wakes one waiter at once, without a read', async () => {
    const { state, poller } = scripted(HELD)
    const { subs, woken } = waiters(poller, 5, 'mutex')
    await vi.advanceTimersByTimeAsync(1_000)
    const reads = state.reads
    poller.changed('k')
    await vi.advanceTimersByTimeAsync(0)
    expect([...woken]).toEqual([0])
    expect(state.reads).toBe(reads)
    for (const s of subs) s.close()
  })

  it('a failing read wakes a waiter to try (and report) on its own, and keeps polling', async () => {
    const { state, poller } = scripted(HELD)
    state.fail = true
    const { subs, woken } = waiters(poller, 5, 'mutex')
    await vi.advanceTimersByTimeAsync(10)
    expect(woken.size).toBe(1)
    expect(poller.sawFree('k')).toBe(false)
    state.fail = false
    state.live = FREE
    const reads = state.reads
    await vi.advanceTimersByTimeAsync(500)
    expect(state.reads).toBeGreaterThan(reads)
    for (const s of subs) s.close()
    expect(vi.getTimerCount()).toBe(0)
  })

  it('stops polling when its last waiter leaves, and for good on close', async () => {
    const { state, poller } = scripted(HELD)
    const { subs } = waiters(poller, 3, 'mutex', 10)
    for (const s of subs) s.close()
    await vi.advanceTimersByTimeAsync(1_000)
    expect(state.reads).toBe(0)
    poller.close()
    const late = poller.subscribe('k', 'mutex')
    await vi.advanceTimersByTimeAsync(1_000)
    expect(state.reads).toBe(0)
    late.close()
    expect(vi.getTimerCount()).toBe(0)
  })
})
