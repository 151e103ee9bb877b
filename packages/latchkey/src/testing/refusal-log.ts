import type { Backend } from '../backend/types.js'

/**
 * Wraps a backend, noting for each lock key the owners a `tryAcquire` answered "not now". A waiting acquire's
 * first try is what puts it in line (a fair or write waiter) or makes it a waiter at all, so a test orders "B is
 * waiting, now release A" by this observable answer instead of a guess of how long B takes to ask.
 */
export function refusalLog(inner: Backend): { backend: Backend; refusedOwners(key: string): number } {
  const refused = new Map<string, Set<string>>()
  const backend: Backend = {
    name: inner.name,
    capabilities: inner.capabilities,
    tryAcquire: async (request) => {
      const result = await inner.tryAcquire(request)
      if (!result.acquired) {
        const owners = refused.get(request.key) ?? new Set()
        refused.set(request.key, owners.add(request.owner))
      }
      return result
    },
    renew: (r) => inner.renew(r),
    release: (r) => inner.release(r),
    leaveQueue: (r) => inner.leaveQueue(r),
    isLocked: (r) => inner.isLocked(r),
    forceRelease: (r) => inner.forceRelease(r),
    close: () => inner.close(),
  }
  if (inner.subscribe !== undefined) backend.subscribe = (ref, owner) => inner.subscribe?.(ref, owner) ?? never()
  if (inner.watchLease !== undefined)
    backend.watchLease = (holder, onLost) => inner.watchLease?.(holder, onLost) ?? never()
  return { backend, refusedOwners: (key) => refused.get(key)?.size ?? 0 }
}

function never(): never {
  throw new Error('unreachable: the inner backend lost a method it had')
}
