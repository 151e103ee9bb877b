import type { Backend } from '../backend/types.js'

/** Wraps a backend, counting calls to its primitives (to prove that bad input does no I/O). */
export function countingBackend(inner: Backend): { backend: Backend; calls: () => number } {
  let calls = 0
  const count =
    <A extends unknown[], R>(fn: (...args: A) => R) =>
    (...args: A): R => {
      calls++
      return fn(...args)
    }
  const backend: Backend = {
    name: inner.name,
    capabilities: inner.capabilities,
    tryAcquire: count((...a) => inner.tryAcquire(...a)),
    renew: count((...a) => inner.renew(...a)),
    release: count((...a) => inner.release(...a)),
    leaveQueue: count((...a) => inner.leaveQueue(...a)),
    isLocked: count((...a) => inner.isLocked(...a)),
    forceRelease: count((...a) => inner.forceRelease(...a)),
    close: async () => undefined,
  }
  // Every argument is passed on: a backend that keeps waiters in line wakes each one from its own predecessor
  // watch, found by subscribe's `owner`; dropped, the waiter sleeps until the core's fallback poll.
  if (inner.subscribe !== undefined) backend.subscribe = count((...a) => inner.subscribe?.(...a) ?? never())
  // Not counted: watching a lease is local bookkeeping, not a call to the server.
  if (inner.watchLease !== undefined) backend.watchLease = (...a) => inner.watchLease?.(...a) ?? never()
  if (inner.inspect !== undefined) backend.inspect = (...a) => inner.inspect?.(...a) ?? never()
  if (inner.list !== undefined) backend.list = (...a) => inner.list?.(...a) ?? never()
  return { backend, calls: () => calls }
}

function never(): never {
  throw new Error('unreachable')
}
