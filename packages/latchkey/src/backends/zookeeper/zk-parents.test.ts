import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { ZkConnection } from './zk-connection.js'
import { ZkParents } from './zk-parents.js'

/** A live connection whose deletes succeed and are recorded. */
function fakeConnection(removed: string[]): ZkConnection {
  const client = {
    remove(path: string, _version: number, cb: (error: null) => void) {
      removed.push(path)
      cb(null)
    },
  }
  return {
    alive: true,
    client,
    run: (_what: string, start: (cb: (error: unknown, result: unknown) => void) => void) =>
      new Promise((resolve, reject) => start((error, result) => (error ? reject(error) : resolve(result)))),
  } as unknown as ZkConnection
}

describe('zookeeper lock nodes deleted when idle', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] })
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('a lock node used again within the idle time is kept until idleMs after its last use, with one timer', async () => {
    const removed: string[] = []
    const conn = fakeConnection(removed)
    const parents = new ZkParents(() => conn, 1_000, '/latchkey')
    parents.emptied('/latchkey/a')
    await vi.advanceTimersByTimeAsync(900)
    parents.emptied('/latchkey/a')
    parents.emptied('/latchkey/a')
    expect(vi.getTimerCount()).toBe(1)
    await vi.advanceTimersByTimeAsync(200) // 1,100 ms after the first use, 200 after the last
    expect(removed).toEqual([])
    await vi.advanceTimersByTimeAsync(799)
    expect(removed).toEqual([])
    await vi.advanceTimersByTimeAsync(2)
    expect(removed).toEqual(['/latchkey/a'])
    expect(vi.getTimerCount()).toBe(0)
  })

  it('drain stops the timers and hands back the lock nodes still waiting', () => {
    const parents = new ZkParents(() => undefined, 1_000, '/latchkey')
    parents.emptied('/latchkey/a')
    parents.emptied('/latchkey/b')
    expect(parents.drain()).toEqual(['/latchkey/a', '/latchkey/b'])
    expect(vi.getTimerCount()).toBe(0)
  })
})
