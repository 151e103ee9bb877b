import { monotonicNow } from './clock.js'
import { MAX_TIMER_MS } from './validate.js'

/** Something with one due time at a time: a lease's next renewal or its deadline. */
export interface TimedEntry {
  /** Position in the heap; -1 when not scheduled. Owned by {@link LeaseTimers}. */
  heapIndex: number
  dueAt: number
  /** Called once when `dueAt` has passed; the entry is unscheduled by then. */
  onDue(): void
}

/**
 * The watchdog clock of one `Locks` (and, with `keepAlive`, the deadlines of its in-flight tries): every lease's next
 * renewal or deadline in one indexed min-heap, served by
 * ONE unref'ed Node timer armed for the earliest. A timer per lease made each acquire and release start and
 * stop a libuv timer, which measurably slowed every round trip of the process (about 20 µs per lock+unlock
 * against a local Redis). Here leases of equal TTL come due in the order they were taken, so the armed timer
 * rarely moves; a cancelled earliest entry leaves it armed, to fire early and re-arm.
 */
export class LeaseTimers {
  private readonly heap: TimedEntry[] = []
  private timer: NodeJS.Timeout | undefined
  private armedAt = Number.POSITIVE_INFINITY

  /**
   * @param keepAlive When true, the timer keeps the process alive while any entry is scheduled (an in-flight
   * backend call is pending work) and stops doing so once none is, without being stopped: toggling a timer's
   * ref is far cheaper than starting one, and the armed instant rarely moves.
   */
  constructor(private readonly keepAlive = false) {}

  /** (Re)schedules `entry` at `dueAt` (monotonic ms). */
  schedule(entry: TimedEntry, dueAt: number): void {
    if (entry.heapIndex >= 0) this.remove(entry)
    entry.dueAt = dueAt
    entry.heapIndex = this.heap.length
    this.heap.push(entry)
    this.up(entry.heapIndex)
    if (this.keepAlive && this.heap.length === 1) this.timer?.ref()
    this.arm()
  }

  cancel(entry: TimedEntry): void {
    if (entry.heapIndex >= 0) this.remove(entry)
  }

  /** Stops the timer (entries stay, for leases that are still being released). */
  close(): void {
    clearTimeout(this.timer)
    this.timer = undefined
    this.armedAt = Number.POSITIVE_INFINITY
  }

  private arm(): void {
    const first = this.heap[0]
    if (first === undefined || (this.timer !== undefined && this.armedAt <= first.dueAt)) return
    clearTimeout(this.timer)
    this.armedAt = first.dueAt
    // Clamped to what a Node timer can wait (about 24.8 days): a later entry is found not yet due and re-armed.
    this.timer = setTimeout(() => this.fire(), Math.min(MAX_TIMER_MS, Math.max(0, first.dueAt - monotonicNow())))
    if (!this.keepAlive) this.timer.unref()
  }

  private fire(): void {
    this.timer = undefined
    this.armedAt = Number.POSITIVE_INFINITY
    const now = monotonicNow()
    for (let first = this.heap[0]; first !== undefined && first.dueAt <= now; first = this.heap[0]) {
      this.remove(first)
      first.onDue()
    }
    this.arm()
  }

  private remove(entry: TimedEntry): void {
    const at = entry.heapIndex
    const last = this.heap.pop() as TimedEntry
    entry.heapIndex = -1
    if (this.keepAlive && this.heap.length === 0) this.timer?.unref()
    if (last === entry) return
    this.heap[at] = last
    last.heapIndex = at
    this.down(at)
    this.up(last.heapIndex)
  }

  private up(index: number): void {
    let i = index
    const entry = this.heap[i] as TimedEntry
    while (i > 0) {
      const parentAt = (i - 1) >> 1
      const parent = this.heap[parentAt] as TimedEntry
      if (parent.dueAt <= entry.dueAt) break
      this.heap[i] = parent
      parent.heapIndex = i
      i = parentAt
    }
    this.heap[i] = entry
    entry.heapIndex = i
  }

  private down(index: number): void {
    let i = index
    const entry = this.heap[i] as TimedEntry
    const n = this.heap.length
    for (;;) {
      const left = 2 * i + 1
      if (left >= n) break
      const right = left + 1
      const childAt =
        right < n && (this.heap[right] as TimedEntry).dueAt < (this.heap[left] as TimedEntry).dueAt ? right : left
      const child = this.heap[childAt] as TimedEntry
      if (child.dueAt >= entry.dueAt) break
      this.heap[i] = child
      child.heapIndex = i
      i = childAt
    }
    this.heap[i] = entry
    entry.heapIndex = i
  }
}
