/**
 * A backend call raced against a deadline. The core cannot cancel a call already sent (the server may still run
 * it), so the caller decides what to do with an abandoned call: {@link Settled.pending} is the call itself.
 */
import type { CallOptions } from '../backend/types.js'
import type { LeaseTimers, TimedEntry } from './lease-timers.js'

/** The outcome of {@link settleWithin}. */
export type Settled<T> =
  | { readonly state: 'answered'; readonly value: T }
  | { readonly state: 'failed'; readonly error: unknown }
  | {
      readonly state: 'unanswered'
      readonly pending: Promise<T>
      /** What `options.signal` aborted with: `pending` rejecting with it is the backend honouring it, not a fault. */
      readonly abortReason: unknown
    }

/**
 * Sends `send(options)` and waits for its answer at most until `dueAt` (monotonic ms) and the event loop's next
 * read of the sockets; never rejects. The
 * deadline is an entry in `clock`, the context's shared heap of due times with one timer that keeps the process
 * alive while a call is pending: a try that answers in time (the common case) starts and stops no timer and
 * builds no `Promise.race`. An infinite `dueAt` is no deadline. `options.signal` is created only if the backend reads it, and aborts when the deadline abandons the
 * call.
 */
export function settleWithin<T>(
  clock: LeaseTimers,
  dueAt: number,
  send: (options: CallOptions) => Promise<T>,
): Promise<Settled<T>> {
  const race = new Race<T>()
  let call: Promise<T>
  try {
    call = send(race)
  } catch (error) {
    // A backend method that throws before returning its promise fails the try like a rejection would.
    return Promise.resolve({ state: 'failed', error })
  }
  return new Promise<Settled<T>>((resolve) => {
    race.start(call, resolve)
    if (dueAt < Number.POSITIVE_INFINITY) clock.schedule(race, dueAt)
    call.then(
      (value) => race.end(clock, { state: 'answered', value }),
      (error: unknown) => race.end(clock, { state: 'failed', error }),
    )
  })
}

/** One call in flight: whichever of its answer and its deadline comes first settles it. */
class Race<T> implements TimedEntry, CallOptions {
  heapIndex = -1
  dueAt = 0
  private settle: ((outcome: Settled<T>) => void) | undefined
  private call: Promise<T> | undefined
  private controller: AbortController | undefined

  /** Built on first read: most backends never look, and an `AbortController` per try is not free. */
  get signal(): AbortSignal {
    this.controller ??= new AbortController()
    return this.controller.signal
  }

  start(call: Promise<T>, settle: (outcome: Settled<T>) => void): void {
    this.call = call
    this.settle = settle
  }

  end(clock: LeaseTimers, outcome: Settled<T>): void {
    clock.cancel(this)
    this.settleOnce(outcome)
  }

  onDue(): void {
    if (this.call === undefined || this.settle === undefined) return
    // Node runs due timers before it reads the sockets: after a stall (a GC pause, a loaded machine), an answer that
    // reached this process in time would lose to its own deadline and be reported as the backend's silence. The
    // check phase (setImmediate) comes after this turn's poll phase, so by then an answer already received has
    // settled the race; the deadline moves by that one turn only.
    setImmediate(() => this.abandon())
  }

  private abandon(): void {
    if (this.call === undefined || this.settle === undefined) return
    const abortReason = new DOMException('latchkey abandoned this backend call at its deadline', 'TimeoutError')
    this.settleOnce({ state: 'unanswered', pending: this.call, abortReason })
    this.controller?.abort(abortReason)
  }

  private settleOnce(outcome: Settled<T>): void {
    const settle = this.settle
    this.settle = undefined
    settle?.(outcome)
  }
}
