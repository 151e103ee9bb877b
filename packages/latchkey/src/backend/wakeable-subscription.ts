/**
 * The waiting half of every release subscription: how a waiter sleeps until a release wakes it, its poll
 * interval runs out, or its caller gives up, without leaking a timer or an abort listener. Subclasses decide
 * what a release does (`fire`) and how a subscription leaves (`close`).
 */

/**
 * A subscription whose `wait(timeoutMs, signal)` resolves on the next wake-up (at once if one is pending or the
 * subscription is closed), after `timeoutMs` (a wait is a poll interval, never an error), or rejects with
 * `signal.reason`. A subclass's `close()` calls {@link stopListening}.
 *
 * @example
 * class MySubscription extends WakeableSubscription {
 *   fire(): void { if (this.wake !== undefined) this.wake(); else this.pending = true }
 *   close(): void { this.closed = true; this.stopListening(); this.wake?.() }
 * }
 */
export abstract class WakeableSubscription {
  /** A wake-up arrived while not waiting: the next `wait()` returns at once. */
  pending = false
  /** Set by close(): later waits return at once. */
  closed = false
  /** Ends the current wait early; set only while a `wait` is pending. */
  protected wake: (() => void) | undefined
  /** Let the poll timer alone not keep the process alive. Default false. */
  protected readonly unrefTimer: boolean = false
  /**
   * The signal whose abort listener is in place. It stays from one wait to the next (the waits of one acquire get
   * the same signal) until {@link stopListening}: removing an `AbortSignal` listener at every wake-up and adding it
   * again at the next wait was 3-4 µs of a woken waiter's path on a loaded host (bench/REDIS-HANDOFF.md).
   */
  private listening: AbortSignal | undefined
  /** Rejects the pending wait with the signal's reason; set only while a wait is pending. */
  private abortWait: ((reason: unknown) => void) | undefined
  private readonly onAbort = (): void => this.abortWait?.(this.listening?.reason)

  /** Removes the abort listener a wait left in place. For `close()`. */
  protected stopListening(): void {
    this.listening?.removeEventListener('abort', this.onAbort)
    this.listening = undefined
  }

  /** Runs as a wait starts blocking (after `wake` is set). */
  protected onWaitStart(): void {}
  /** Runs once as a blocking wait ends, however it ends (after `wake` and `pending` are cleared). */
  protected onWaitEnd(): void {}

  abstract close(): void

  wait(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason)
    if (this.pending || this.closed) {
      this.pending = false
      return Promise.resolve()
    }
    if (signal !== this.listening) {
      this.stopListening()
      signal?.addEventListener('abort', this.onAbort)
      this.listening = signal
    }
    return new Promise<void>((resolve, reject) => {
      const done = (): void => {
        clearTimeout(timer)
        this.wake = undefined
        this.abortWait = undefined
        this.pending = false
        this.onWaitEnd()
      }
      this.abortWait = (reason) => {
        done()
        reject(reason)
      }
      const timer = setTimeout(() => {
        done()
        resolve()
      }, timeoutMs)
      if (this.unrefTimer) timer.unref()
      this.wake = () => {
        done()
        resolve()
      }
      this.onWaitStart()
    })
  }
}
