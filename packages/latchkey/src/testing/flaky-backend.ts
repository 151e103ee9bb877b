import type { Backend } from '../backend/types.js'
import { BackendUnavailableError } from '../errors.js'

/**
 * A backend wrapper whose calls can be made to fail (`state.down`: as if the server were down), to take a while
 * (`state.delayMs`), or to hang (`hang()`: every call made until `resume()` waits for it, as a server that accepts
 * connections and answers nothing; then they run). `state.calls` lists the primitives called, in order. For
 * fault-injection tests of code built on latchkey (and of the core itself) without stopping a server.
 *
 * @example
 * const { backend, state } = flakyBackend(memoryBackend())
 * const locks = createLocks({ backend })
 * state.down = true // every call now rejects with BackendUnavailableError
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
    tryAcquire: wrap('tryAcquire', (...a) => inner.tryAcquire(...a)),
    renew: wrap('renew', (...a) => inner.renew(...a)),
    release: wrap('release', (...a) => inner.release(...a)),
    leaveQueue: wrap('leaveQueue', (...a) => inner.leaveQueue(...a)),
    isLocked: wrap('isLocked', (...a) => inner.isLocked(...a)),
    forceRelease: wrap('forceRelease', (...a) => inner.forceRelease(...a)),
    close: () => inner.close(),
  }
  // Every argument is passed on: a backend that keeps waiters in line wakes each one from its own predecessor
  // watch, found by subscribe's `owner`; dropped, the waiter sleeps until the core's fallback poll.
  if (inner.subscribe !== undefined) backend.subscribe = (...a) => inner.subscribe?.(...a) ?? never()
  if (inner.watchLease !== undefined) backend.watchLease = (...a) => inner.watchLease?.(...a) ?? never()
  if (inner.inspect !== undefined) backend.inspect = (...a) => inner.inspect?.(...a) ?? never()
  if (inner.list !== undefined) backend.list = (...a) => inner.list?.(...a) ?? never()
  return { backend, state }
}

function never(): never {
  throw new Error('unreachable: the inner backend lost a method it had')
}
