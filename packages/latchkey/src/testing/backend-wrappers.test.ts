import { afterEach, describe, expect, it } from 'vitest'
import type { Backend, LockRef } from '../backend/types.js'
import { memoryBackend } from '../backends/memory/index.js'
import { createLocks, type Locks } from '../core/locks.js'
import { countingBackend } from './counting-backend.js'
import { eventually } from './eventually.js'
import { flakyBackend } from './flaky-backend.js'

const opened: Locks[] = []
afterEach(async () => {
  await Promise.all(opened.splice(0).map((l) => l.close()))
})

/** A memory backend that records the `owner` every `subscribe` call receives. */
function recordingBackend(): { backend: Backend; owners: (string | undefined)[] } {
  const backend = memoryBackend()
  const owners: (string | undefined)[] = []
  const subscribe = backend.subscribe?.bind(backend)
  if (subscribe === undefined) throw new Error('the memory backend pushes releases')
  backend.subscribe = (ref: LockRef, owner?: string) => {
    owners.push(owner)
    return subscribe(ref, owner)
  }
  return { backend, owners }
}

// ZooKeeper feeds a waiter's subscription from that waiter's own predecessor watch, found by `owner`: a wrapper
// that drops it leaves the waiter to the core's fallback poll, seconds later.
describe.each([
  ['flakyBackend', (inner: Backend) => flakyBackend(inner).backend],
  ['countingBackend', (inner: Backend) => countingBackend(inner).backend],
])('%s', (_name, wrap) => {
  it("hands a waiter's owner to the inner backend's subscribe", async () => {
    const { backend, owners } = recordingBackend()
    const locks = createLocks({ backend: wrap(backend) })
    opened.push(locks)
    const held = await locks.mutex('k').tryAcquire()
    if (held === undefined) throw new Error('k is free')
    const waiting = locks.mutex('k').acquire({ waitMs: 5_000 })
    waiting.catch(() => undefined) // a failed expectation closes the locks under it
    await eventually('the waiter subscribed', () => owners.length === 1)
    expect(owners[0]).toEqual(expect.any(String))
    await held.release()
    await (await waiting).release()
  })
})
