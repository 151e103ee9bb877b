/**
 * Release wake-ups for the SQL `'table'` strategy on a database that pushes nothing (MySQL / MariaDB): ONE poller
 * per lock and process reads the lock's holders, and wakes exactly as many of this process's waiters as there
 * are free slots, instead of every waiter polling the database on its own. With 250 waiters in a process that
 * was 250 queries per poll interval and a pool queue that delayed the very release the waiters were looking for;
 * it is now one query per interval, whatever the number of waiters.
 *
 * The poller only decides WHEN a waiter tries: the woken waiter still runs its own try (the grant transaction
 * decides, with the fair line and the grant rules as before), and the core still tries on its own after its
 * fallback pause, so a poll that fails or a wake-up that goes astray costs time, never the lock.
 */
import { WakeSubscription } from '../../backend/local-notifier.js'
import type { LockKind, ReleaseSubscription } from '../../backend/types.js'
import type { LiveSummary } from './sql-table-grant.js'

/** The shortest interval, right after the holders changed: a busy lock changes hands every few milliseconds. */
const FIRST_POLL_MS = 2
/** The longest interval (the core's default `maxPollMs`): a lock held that long is polled this often. */
const MAX_POLL_MS = 100
/**
 * The interval is this fraction of the time since the holders last changed: a lock that changes hands every
 * 10 ms is polled every 2-3 ms (doubling on every unchanged read would reach 16 ms within two handoffs), one held
 * for seconds every 100 ms.
 */
const SINCE_CHANGE_FRACTION = 1 / 4

/** Reads the occupying holders of one lock (the `summary` statement, without an owner of interest). */
export type ReadHolders = (key: string) => Promise<LiveSummary>

/** One waiting acquire of this process. */
class PolledWaiter extends WakeSubscription {
  /** Woken, and not yet back in a blocking `wait` nor closed: its try is in flight. */
  trying = false

  constructor(
    /** Mutex and semaphore waiters are woken one per free slot; fair, read and write waiters all together. */
    readonly onePerSlot: boolean,
    detach: (sub: WakeSubscription) => void,
  ) {
    super(detach)
  }

  /** Wakes it for a try. */
  nudge(): void {
    this.trying = true
    this.fire()
  }

  protected override onWaitStart(): void {
    // Back in a blocking wait: its try has answered "held".
    this.trying = false
  }
}

/** The waiters of one lock in this process, oldest first, and the poll that watches the lock for them. */
class LockWatch {
  readonly waiters = new Set<PolledWaiter>()
  private intervalMs = FIRST_POLL_MS
  private timer: NodeJS.Timeout | undefined
  private polling = false
  /** What the last poll saw, to tell a lock that changes hands from one held all along. */
  private seen = ''
  /** Waiters woken for a slot seen free whose try has not yet come: that many tries may skip their read. */
  private freeWakes = 0
  /** When a poll last saw the holders change, or this process released. */
  private changedAt = Date.now()

  constructor(
    private readonly key: string,
    private readonly read: ReadHolders,
    private readonly stopped: () => boolean,
  ) {}

  /** A release in this process freed a slot: wake one waiter at once and watch closely again. */
  released(): void {
    this.intervalMs = FIRST_POLL_MS
    this.changedAt = Date.now()
    // A slot this process knows is free: one more try even while others are out (they were sent before it).
    this.wake(1, true, true)
    this.stop()
    this.schedule()
  }

  /** Arms the next poll unless one is armed or running; stops when no waiter is left. */
  schedule(ms: number = this.intervalMs): void {
    if (this.timer !== undefined || this.polling || this.waiters.size === 0 || this.stopped()) return
    this.timer = setTimeout(() => this.poll(), ms)
    // The waiters' own timers keep the process alive; the poll only serves them.
    this.timer.unref()
  }

  /** Whether a try may skip its read of the holders: a waiter was just woken for a slot seen free. */
  takeFreeWake(): boolean {
    if (this.freeWakes === 0) return false
    this.freeWakes--
    return true
  }

  stop(): void {
    clearTimeout(this.timer)
    this.timer = undefined
  }

  private poll(): void {
    this.timer = undefined
    // Every waiter is trying already: their tries will see what a poll would.
    if (!this.anyBlocked()) {
      this.schedule()
      return
    }
    this.polling = true
    this.read(this.key).then(
      (live) => {
        this.polling = false
        this.observed(live)
      },
      () => {
        // The waiters' own tries report what is wrong with the database (the core's unavailableMs): wake one of
        // each sort to find out, and back off meanwhile.
        this.polling = false
        this.intervalMs = Math.min(MAX_POLL_MS, this.intervalMs * 2)
        this.wake(1, true)
        // Nothing was seen free: the woken try reads for itself.
        this.freeWakes = 0
        this.schedule()
      },
    )
  }

  private anyBlocked(): boolean {
    for (const w of this.waiters) if (w.waiting) return true
    return false
  }

  private observed(live: LiveSummary): void {
    const seen = `${live.n}:${live.firstFree}:${live.lastFree}`
    const changed = seen !== this.seen
    this.seen = seen
    const now = Date.now()
    if (changed) this.changedAt = now
    this.intervalMs = Math.min(MAX_POLL_MS, Math.max(FIRST_POLL_MS, (now - this.changedAt) * SINCE_CHANGE_FRACTION))
    // Mutex holders record no permit count (0): a mutex is free only when nobody occupies it.
    const free = live.n === 0 ? 1 : Math.max(0, live.permits - live.n)
    if (free === 0) this.freeWakes = 0
    this.wake(free, changed || live.n === 0)
    // A holder that never releases frees its slot when its lease (and lock-delay) runs out.
    const untilFree = live.n > 0 && live.firstFree > live.now ? live.firstFree - live.now + 1 : Number.POSITIVE_INFINITY
    this.schedule(Math.min(this.intervalMs, untilFree))
  }

  /**
   * Wakes up to `slots` one-per-slot waiters (oldest first, those blocked in `wait` before those between tries),
   * counting those already trying unless `extra`, and every other waiter when `all`.
   */
  private wake(slots: number, all: boolean, extra = false): void {
    let left = slots
    if (!extra) for (const w of this.waiters) if (w.onePerSlot && w.trying) left--
    for (const pass of [true, false]) {
      for (const w of this.waiters) {
        if (left <= 0) break
        if (w.onePerSlot && !w.trying && !w.pending && w.waiting === pass) {
          w.nudge()
          left--
          if (slots > 0) this.freeWakes = Math.min(this.freeWakes + 1, this.waiters.size)
        }
      }
    }
    if (all) for (const w of this.waiters) if (!w.onePerSlot) w.nudge()
  }
}

/**
 * The per-process registry of {@link LockWatch}es: `subscribe` adds a waiter (and starts its lock's poll),
 * `changed` is a release in this process, `close` stops every poll.
 *
 * @example
 * const poller = new TablePoller((key) => readSummary(key))
 * const sub = poller.subscribe(key, 'mutex') // the core waits on it; closes it when done
 */
export class TablePoller {
  private readonly watches = new Map<string, LockWatch>()
  private closed = false

  constructor(private readonly read: ReadHolders) {}

  subscribe(key: string, kind: LockKind): ReleaseSubscription {
    let watch = this.watches.get(key)
    if (watch === undefined) {
      watch = new LockWatch(key, this.read, () => this.closed)
      this.watches.set(key, watch)
    }
    const owner = watch
    const waiter = new PolledWaiter(kind === 'mutex' || kind === 'semaphore', (sub) => {
      owner.waiters.delete(sub as PolledWaiter)
      if (owner.waiters.size > 0) return
      owner.stop()
      if (this.watches.get(key) === owner) this.watches.delete(key)
    })
    watch.waiters.add(waiter)
    watch.schedule()
    return waiter
  }

  /**
   * True (once per waiter woken for a slot seen free) when a try of `key` may go straight to its transaction:
   * the read before it would repeat the poll that woke it. Only an optimisation: the transaction decides.
   */
  sawFree(key: string): boolean {
    return this.watches.get(key)?.takeFreeWake() ?? false
  }

  /** A release, leave or forced release in this process changed the lock's rows. */
  changed(key: string): void {
    this.watches.get(key)?.released()
  }

  /** Stops every poll; open subscriptions still end by their own timeouts. */
  close(): void {
    this.closed = true
    for (const watch of this.watches.values()) watch.stop()
  }

  /** Locks watched (for leak checks). */
  get size(): number {
    return this.watches.size
  }
}
