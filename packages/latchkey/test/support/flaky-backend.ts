import type { Backend } from '../../src/backend/types.js'
import { BackendUnavailableError } from '../../src/errors.js'

/**
 * A backend wrapper whose calls can be made to fail (as if the server were down), to take a while, or to hang
 * (`hang()`: every call made until `resume()` waits for it, as a server that accepts connections and answers
 * nothing; then they run).
 */
export function flakyBackend(inner: Backend) {
  let gate: { promise: Promise<void>; open(): void } | undefined
  const state = {
    down: false,
    delayMs: 0,
    calls: [] as string[],
    hang(): void {
      if (gate !== undefined) return
      let open = (): void => undefined
      const promise = new Promise<void>((resolve) => {
        open = resolve
      })
      gate = { promise, open }
    },
    resume(): void {
      gate?.open()
      gate = undefined
    },
  }
  const wrap =
    <A extends unknown[], R>(name: string, fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      state.calls.push(name)
      if (gate !== undefined) await gate.promise
      if (state.delayMs > 0) await new Promise((r) => setTimeout(r, state.delayMs))
      if (state.down) throw new BackendUnavailableError(`${name}: server down (test)`)
      return fn(...args)
    }
  const backend: Backend = {
    name: 'flaky',
    capabilities: inner.capabilities,
    tryAcquire: wrap('tryAcquire', (r) => inner.tryAcquire(r)),
    renew: wrap('renew', (r) => inner.renew(r)),
    release: wrap('release', (r) => inner.release(r)),
    leaveQueue: wrap('leaveQueue', (r) => inner.leaveQueue(r)),
    isLocked: wrap('isLocked', (r) => inner.isLocked(r)),
    forceRelease: wrap('forceRelease', (r) => inner.forceRelease(r)),
    subscribe: (r) => {
      const sub = inner.subscribe?.(r)
      if (sub === undefined) throw new Error('inner backend has no subscribe')
      return sub
    },
    close: () => inner.close(),
  }
  return { backend, state }
}
