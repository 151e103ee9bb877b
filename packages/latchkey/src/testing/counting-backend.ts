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
    tryAcquire: count((r) => inner.tryAcquire(r)),
    renew: count((r) => inner.renew(r)),
    release: count((r) => inner.release(r)),
    leaveQueue: count((r) => inner.leaveQueue(r)),
    isLocked: count((r) => inner.isLocked(r)),
    forceRelease: count((r) => inner.forceRelease(r)),
    close: async () => undefined,
  }
  // The owner is forwarded: a backend that keeps waiters in line wakes each one from its own predecessor watch.
  if (inner.subscribe !== undefined) backend.subscribe = count((ref, owner) => inner.subscribe?.(ref, owner) ?? never())
  // Not counted: watching a lease is local bookkeeping, not a call to the server.
  if (inner.watchLease !== undefined)
    backend.watchLease = (holder, onLost) => inner.watchLease?.(holder, onLost) ?? never()
  return { backend, calls: () => calls }
}

function never(): never {
  throw new Error('unreachable')
}
