/**
 * Counts a backend's `tryAcquire` calls as they return. A waiter's first try returns once it is in line with its
 * watches set, so a test can wait for that instead of for a node count (which shows the node, not the watches).
 */
import type { Backend } from '../../src/backend/types.js'

/** Wraps `backend.tryAcquire`; the result reads how many tries have returned so far. */
export function countTries(backend: Backend): () => number {
  let tries = 0
  const tryAcquire = backend.tryAcquire.bind(backend)
  backend.tryAcquire = async (request) => {
    const result = await tryAcquire(request)
    tries++
    return result
  }
  return () => tries
}
