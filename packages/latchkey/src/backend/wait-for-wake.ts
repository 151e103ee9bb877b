/**
 * The one waiting primitive under every release subscription: how a waiter sleeps until a release wakes it,
 * its poll interval runs out, or its caller gives up, without leaking a timer or an abort listener.
 */

/** How {@link waitForWake} hands its wake-up function out and takes it back. */
export interface WakeHooks {
  /** Receives the function that ends the wait early (a release arrived); called once, as the wait starts. */
  armed(wake: () => void): void
  /** Runs once when the wait ends, however it ends, after the timer and abort listener are gone. */
  disarmed(): void
  /** Do not let the timer alone keep the process alive. Default false. */
  unref?: boolean
}

/**
 * Resolves when the wake function handed to `hooks.armed` is called or after `timeoutMs` (a wait is a poll
 * interval, never an error), rejects with `signal.reason` when `signal` aborts. The caller checks for an abort
 * already signalled and for a wake-up already pending before it waits.
 *
 * @example
 * return waitForWake(timeoutMs, signal, { armed: (wake) => (this.wake = wake), disarmed: () => (this.wake = undefined) })
 */
export function waitForWake(timeoutMs: number, signal: AbortSignal | undefined, hooks: WakeHooks): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const done = (): void => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
      hooks.disarmed()
    }
    const onAbort = (): void => {
      done()
      reject(signal?.reason)
    }
    const timer = setTimeout(() => {
      done()
      resolve()
    }, timeoutMs)
    if (hooks.unref === true) timer.unref()
    hooks.armed(() => {
      done()
      resolve()
    })
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
