/**
 * The deadlines of one connection's unary calls, on one timer. A timer per call cost a setTimeout and a
 * clearTimeout per call (each an insertion in node's timer lists and a Timeout object), on the path of every etcd
 * call. Calls sent with the same timeout (a client's calls all have one) end in the order they were sent, so a
 * queue in send order is sorted by deadline, and one timer, armed for the oldest call still out, serves them all.
 * An answered call leaves the queue once the calls before it have: it is only marked settled.
 */

/** A call as its deadline sees it. */
export interface Deadline {
  /** Monotonic ms (`performance.now()`) past which the call fails. */
  readonly dueAt: number
  /** Answered or failed: its deadline no longer matters. */
  readonly settled: boolean
  /** Its deadline passed first. */
  expire(): void
}

/** The longest delay node's timers take (2^31 - 1 ms). */
const MAX_TIMER_MS = 2_147_483_647

export class CallDeadlines {
  private queue: Deadline[] = []
  /** Index of the oldest entry still in `queue` (entries before it are gone; the array is cut now and then). */
  private head = 0
  private timer: NodeJS.Timeout | undefined
  /** When the timer fires (Infinity when none is armed). */
  private timerAt = Number.POSITIVE_INFINITY

  /** Starts timing `call`. */
  add(call: Deadline): void {
    this.dropSettled()
    const queue = this.queue
    let at = queue.length
    // A call with a shorter timeout than calls already out (not sent by this backend, but allowed) goes before them.
    while (at > this.head && (queue[at - 1] as Deadline).dueAt > call.dueAt) at--
    if (at === queue.length) queue.push(call)
    else queue.splice(at, 0, call)
    if (call.dueAt < this.timerAt) this.arm(call.dueAt)
  }

  /** Forgets every call (the connection is closed: its calls have failed). */
  clear(): void {
    clearTimeout(this.timer)
    this.timer = undefined
    this.timerAt = Number.POSITIVE_INFINITY
    this.queue = []
    this.head = 0
  }

  private arm(at: number): void {
    clearTimeout(this.timer)
    this.timerAt = at
    // Past node's timer range a timer fires at once: a far deadline is reached by re-arming instead.
    this.timer = setTimeout(this.fire, Math.min(MAX_TIMER_MS, Math.max(1, at - performance.now())))
    // A call in flight holds the process through its stream's socket (h2-session.ts refs it while a stream is
    // open), as the timer of each call did; an idle client must not.
    this.timer.unref()
  }

  private readonly fire = (): void => {
    this.timer = undefined
    this.timerAt = Number.POSITIVE_INFINITY
    const now = performance.now()
    // `expire` may send calls of its own (their `add` arms the timer): the queue is read afresh each round.
    for (let call = this.queue[this.head]; call !== undefined; call = this.queue[this.head]) {
      if (!call.settled && call.dueAt > now) break
      this.head++
      if (!call.settled) call.expire()
    }
    this.dropSettled()
    const next = this.queue[this.head]
    if (next !== undefined && next.dueAt < this.timerAt) this.arm(next.dueAt)
  }

  /** Drops the settled calls at the front; cuts the array once most of it is gone. */
  private dropSettled(): void {
    const queue = this.queue
    while (this.head < queue.length && (queue[this.head] as Deadline).settled) this.head++
    if (this.head === queue.length) {
      queue.length = 0
      this.head = 0
    } else if (this.head >= 1_024 && this.head * 2 >= queue.length) {
      this.queue = queue.slice(this.head)
      this.head = 0
    }
  }
}
