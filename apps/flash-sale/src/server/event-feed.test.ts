import type { ServerResponse } from 'node:http'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { EventFeed } from './event-feed.js'

/** The part of a ServerResponse the feed uses. */
function fakeStream(): ServerResponse & { written: string[] } {
  const written: string[] = []
  return {
    written,
    writableNeedDrain: false,
    write: (chunk: string) => written.push(chunk) > 0,
    end: () => undefined,
  } as unknown as ServerResponse & { written: string[] }
}

describe('EventFeed', () => {
  beforeEach(() => {
    vi.useFakeTimers()
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('polls once per tick for all subscribers, from the first one until the last one leaves', async () => {
    let reads = 0
    const feed = new EventFeed(async () => `data: ${++reads}\n\n`, 500, 10)
    expect(vi.getTimerCount()).toBe(0)
    const a = fakeStream()
    const b = fakeStream()
    feed.add(a)
    await vi.advanceTimersByTimeAsync(0)
    // A late subscriber gets the last payload at once, without a read of its own.
    feed.add(b)
    expect(reads).toBe(1)
    expect(b.written).toEqual(['data: 1\n\n'])
    await vi.advanceTimersByTimeAsync(1_000)
    expect(reads).toBe(3)
    expect(a.written).toEqual(['data: 1\n\n', 'data: 2\n\n', 'data: 3\n\n'])
    expect(b.written).toEqual(['data: 1\n\n', 'data: 2\n\n', 'data: 3\n\n'])
    feed.remove(a)
    await vi.advanceTimersByTimeAsync(500)
    expect(reads).toBe(4)
    feed.remove(b)
    expect(vi.getTimerCount()).toBe(0)
    await vi.advanceTimersByTimeAsync(5_000)
    expect(reads).toBe(4)
  })

  it('refuses a subscriber past maxStreams, and accepts one again after a leave', () => {
    const feed = new EventFeed(async () => 'data: x\n\n', 500, 2)
    const [a, b, c] = [fakeStream(), fakeStream(), fakeStream()]
    expect(feed.add(a)).toBe(true)
    expect(feed.add(b)).toBe(true)
    expect(feed.add(c)).toBe(false)
    expect(feed.size).toBe(2)
    feed.remove(a)
    expect(feed.add(c)).toBe(true)
    feed.close()
    expect(feed.size).toBe(0)
    expect(vi.getTimerCount()).toBe(0)
  })

  it('a failed read is sent as a failure event, and the next tick reads again', async () => {
    let reads = 0
    const feed = new EventFeed(
      async () => {
        if (++reads === 1) throw new Error('store down')
        return 'data: ok\n\n'
      },
      500,
      10,
    )
    const a = fakeStream()
    feed.add(a)
    await vi.advanceTimersByTimeAsync(500)
    expect(a.written).toEqual(['event: failure\ndata: "Error: store down"\n\n', 'data: ok\n\n'])
    feed.close()
  })
})
