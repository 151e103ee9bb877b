import type { Backend } from '../backend/types.js'

/**
 * Wraps a backend, noting for each lock key the owners a `tryAcquire` answered "not now". A waiting acquire's
 * first try is what puts it in line (a fair or write waiter) or makes it a waiter at all, so a test orders "B is
 * waiting, now release A" by this observable answer instead of a guess of how long B takes to ask.
 */
export function refusalLog(inner: Backend): { backend: Backend; refusedOwners(key: string): number } {
  const refused = new Map<string, Set<string>>()
  // Every argument is passed on: a wrapper that drops one (subscribe's owner) changes what the backend does.
  const backend: Backend = {
    name: inner.name,
    capabilities: inner.capabilities,
    tryAcquire: async (...a) => {
      const [request] = a
      const result = await inner.tryAcquire(...a)
      if (!result.acquired) {
        const owners = refused.get(request.key) ?? new Set()
        refused.set(request.key, owners.add(request.owner))
      }
      return result
    },
    renew: (...a) => inner.renew(...a),
    release: (...a) => inner.release(...a),
    leaveQueue: (...a) => inner.leaveQueue(...a),
    isLocked: (...a) => inner.isLocked(...a),
    forceRelease: (...a) => inner.forceRelease(...a),
    close: () => inner.close(),
  }
  if (inner.subscribe !== undefined) backend.subscribe = (...a) => inner.subscribe?.(...a) ?? never()
  if (inner.watchLease !== undefined) backend.watchLease = (...a) => inner.watchLease?.(...a) ?? never()
  if (inner.inspect !== undefined) backend.inspect = (...a) => inner.inspect?.(...a) ?? never()
  if (inner.list !== undefined) backend.list = (...a) => inner.list?.(...a) ?? never()
  return { backend, refusedOwners: (key) => refused.get(key)?.size ?? 0 }
}

function never(): never {
  throw new Error('unreachable: the inner backend lost a method it had')
}
