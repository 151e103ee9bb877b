import fc from 'fast-check'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { LeaseTimers, type TimedEntry } from './lease-timers.js'

function entry(log: string[], name: string): TimedEntry {
  return { heapIndex: -1, dueAt: 0, onDue: () => log.push(name) }
}

afterEach(() => {
  vi.useRealTimers()
})

describe('LeaseTimers', () => {
  it('fires each entry once, in due order, with one Node timer; cancelled and rescheduled entries follow suit', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] })
    const timers = new LeaseTimers()
    const log: string[] = []
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((n) => entry(log, n)) as [
      TimedEntry,
      TimedEntry,
      TimedEntry,
      TimedEntry,
    ]
    const now = performance.now()
    timers.schedule(a, now + 30)
    timers.schedule(b, now + 10)
    timers.schedule(c, now + 20)
    timers.schedule(d, now + 40)
    timers.cancel(c)
    timers.schedule(a, now + 50) // moved later
    expect(vi.getTimerCount()).toBe(1)
    await vi.advanceTimersByTimeAsync(9)
    expect(log).toEqual([])
    await vi.advanceTimersByTimeAsync(1)
    expect(log).toEqual(['b'])
    await vi.advanceTimersByTimeAsync(40)
    expect(log).toEqual(['b', 'd', 'a'])
    expect([a, b, c, d].map((e) => e.heapIndex)).toEqual([-1, -1, -1, -1])
    expect(vi.getTimerCount()).toBe(0)
    timers.close()
  })

  it('keeps the heap ordered under any mix of schedules and cancels (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(9), fc.integer({ min: 0, max: 1_000 }), fc.boolean()), { maxLength: 200 }),
        (ops) => {
          const timers = new LeaseTimers()
          const entries = Array.from({ length: 10 }, () => entry([], 'x'))
          for (const [i, due, cancel] of ops) {
            const e = entries[i] as TimedEntry
            if (cancel) timers.cancel(e)
            else timers.schedule(e, 1e12 + due)
          }
          const heap = (timers as unknown as { heap: TimedEntry[] }).heap
          heap.forEach((e, at) => {
            expect(e.heapIndex).toBe(at)
            if (at > 0) expect((heap[(at - 1) >> 1] as TimedEntry).dueAt).toBeLessThanOrEqual(e.dueAt)
          })
          expect(heap.length).toBe(entries.filter((e) => e.heapIndex >= 0).length)
          timers.close()
        },
      ),
    )
  })
})
