import { BackendUnavailableError } from '../../errors.js'

/** A command got no reply within `commandTimeoutMs` (it may still run later on the server). */
export class CommandTimeoutError extends BackendUnavailableError {
  override name = 'CommandTimeoutError'
}

interface Entry {
  readonly deadline: number
  readonly reject: (error: unknown) => void
}

/**
 * Fails a command that gets no reply in time (a hung server, a client queueing while it reconnects) with
 * `BackendUnavailableError`. One coarse interval, running only while commands are pending, instead of a
 * timer per command: the hot path only adds to and deletes from a set.
 */
export class CommandDeadlines {
  private readonly pending = new Set<Entry>()
  private timer: NodeJS.Timeout | undefined
  private readonly tickMs: number

  /** `timeoutMs` 0 disables the deadlines. */
  constructor(private readonly timeoutMs: number) {
    this.tickMs = Math.max(10, Math.min(250, timeoutMs / 4))
  }

  /** `promise`, or a rejection once it is `timeoutMs + extraMs` old without settling. */
  track<T>(promise: Promise<T>, extraMs = 0): Promise<T> {
    if (this.timeoutMs <= 0) return promise
    return new Promise<T>((resolve, reject) => {
      const entry = this.start(reject, extraMs)
      promise.then(
        (value) => {
          this.finish(entry)
          resolve(value)
        },
        (error: unknown) => {
          this.finish(entry)
          reject(error)
        },
      )
    })
  }

  /**
   * Starts the clock of one command: `onTimeout` gets a `CommandTimeoutError` if {@link finish} is not called
   * within the timeout. Undefined when deadlines are disabled.
   */
  start(onTimeout: (error: unknown) => void, extraMs = 0): object | undefined {
    if (this.timeoutMs <= 0) return undefined
    const entry: Entry = { deadline: performance.now() + this.timeoutMs + extraMs, reject: onTimeout }
    this.pending.add(entry)
    this.timer ??= setInterval(() => this.sweep(), this.tickMs).unref()
    return entry
  }

  /** Stops the clock started by {@link start}; false when the command had already timed out. */
  finish(entry: object | undefined): boolean {
    return entry === undefined || this.pending.delete(entry as Entry)
  }

  private sweep(): void {
    const now = performance.now()
    for (const entry of this.pending) {
      if (entry.deadline > now) continue
      this.pending.delete(entry)
      entry.reject(new CommandTimeoutError(`Redis did not answer within ${this.timeoutMs} ms (commandTimeoutMs)`))
    }
    if (this.pending.size === 0) {
      clearInterval(this.timer)
      this.timer = undefined
    }
  }
}
