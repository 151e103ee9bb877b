import { BackendUnavailableError } from '../../errors.js'

/** A command got no reply within `commandTimeoutMs` (it may still run later on the server). */
export class CommandTimeoutError extends BackendUnavailableError {
  override name = 'CommandTimeoutError'
}

interface Entry {
  readonly deadline: number
  readonly reject: (error: unknown) => void
  prev: Entry | undefined
  next: Entry | undefined
  /** False once finished or timed out. */
  live: boolean
}

/**
 * Fails a command that gets no reply in time (a hung server, a client queueing while it reconnects) with
 * `BackendUnavailableError`. One coarse interval, running only while commands are pending, instead of a
 * timer per command: the hot path only links and unlinks an entry of an intrusive list. (A Set did the same
 * with add/delete, but its churn kept a third of a high-rate process's garbage alive into old space.)
 */
export class CommandDeadlines {
  private head: Entry | undefined
  private tail: Entry | undefined
  private timer: NodeJS.Timeout | undefined
  private readonly tickMs: number

  /** `timeoutMs` 0 disables the deadlines; `server` (`host:port`) is named in the timeout error. */
  constructor(
    private readonly timeoutMs: number,
    private readonly server = 'server',
  ) {
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
    const entry: Entry = {
      deadline: performance.now() + this.timeoutMs + extraMs,
      reject: onTimeout,
      prev: this.tail,
      next: undefined,
      live: true,
    }
    if (this.tail === undefined) this.head = entry
    else this.tail.next = entry
    this.tail = entry
    this.timer ??= setInterval(() => this.sweep(), this.tickMs).unref()
    return entry
  }

  /** Stops the clock started by {@link start}; false when the command had already timed out. */
  finish(entry: object | undefined): boolean {
    if (entry === undefined) return true
    const e = entry as Entry
    if (!e.live) return false
    this.unlink(e)
    return true
  }

  private unlink(e: Entry): void {
    e.live = false
    if (e.prev === undefined) this.head = e.next
    else e.prev.next = e.next
    if (e.next === undefined) this.tail = e.prev
    else e.next.prev = e.prev
    e.prev = undefined
    e.next = undefined
  }

  private sweep(): void {
    const now = performance.now()
    for (let e = this.head; e !== undefined; ) {
      const next = e.next
      if (e.deadline <= now) {
        this.unlink(e)
        e.reject(
          new CommandTimeoutError(
            `Redis ${this.server} did not answer within ${this.timeoutMs} ms (commandTimeoutMs); is it running and reachable?`,
          ),
        )
      }
      e = next
    }
    if (this.head === undefined) {
      clearInterval(this.timer)
      this.timer = undefined
    }
  }
}
