/**
 * A backend call raced against a deadline. The core cannot cancel a call already sent (the server may still run
 * it), so the caller decides what to do with an abandoned call: {@link Settled.pending} is the call itself.
 */
import { MAX_TIMER_MS } from './validate.js'

/** The outcome of {@link settleWithin}. */
export type Settled<T> =
  | { readonly state: 'answered'; readonly value: T }
  | { readonly state: 'failed'; readonly error: unknown }
  | { readonly state: 'unanswered'; readonly pending: Promise<T> }

/**
 * Waits for `call` at most `ms` and never rejects. Beyond what a Node timer can wait (about 24.8 days, e.g. an
 * infinite wait) there is no deadline. The timer is not unref'ed: a pending acquire keeps the process alive.
 */
export function settleWithin<T>(call: Promise<T>, ms: number): Promise<Settled<T>> {
  const settled = call.then(
    (value): Settled<T> => ({ state: 'answered', value }),
    (error: unknown): Settled<T> => ({ state: 'failed', error }),
  )
  if (ms > MAX_TIMER_MS) return settled
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<Settled<T>>((resolve) => {
    timer = setTimeout(() => resolve({ state: 'unanswered', pending: call }), Math.max(0, ms))
  })
  return Promise.race([settled, deadline]).finally(() => clearTimeout(timer))
}
