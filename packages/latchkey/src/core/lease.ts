import { LockLostError, NotLockHolderError } from '../errors.js'
import type { ActiveEntry } from './active-leases.js'
import { driftMs, monotonicNow, wallTimeAt } from './clock.js'
import type { LockTarget } from './context.js'
import { emitSafely } from './events.js'
import type { LeaseTimers, TimedEntry } from './lease-timers.js'
import { checkDuration, MAX_TIMER_MS } from './validate.js'

/**
 * A held lock. Release it with `release()` or `await using`; watch `signal` to stop work when it is lost.
 *
 * @example
 * await using lease = await lock.acquire({ ttlMs: 10_000 })
 * await db.write(row, { fence: lease.token, signal: lease.signal })
 */
export interface Lease extends AsyncDisposable {
  /** The lock name, as given to `mutex(name)`. */
  readonly name: string
  /** The fencing token: strictly increasing per lock name across holders and processes (`0n` if the backend has none). */
  readonly token: bigint
  /**
   * The owner id this lease is stored under in the backend: what `locks.inspect(name)` lists as the holder's
   * `owner` (a multi-lease's parts' ids, joined by `,`).
   */
  readonly owner: string
  /** Aborts with a `LockLostError` when the lease is lost (expired, taken away, or not renewable in time). */
  readonly signal: AbortSignal
  /** Epoch ms after which the lease must be presumed expired (a little before the server's expiry). */
  readonly expiresAt: number
  /** Extends the lease to `ttlMs` from now (default: its current TTL). Rejects with `NotLockHolderError` when lost. */
  extend(ttlMs?: number): Promise<void>
  /** Releases the lock; idempotent. Rejects with `NotLockHolderError` when the lease was no longer held. */
  release(): Promise<void>
}

type LeaseState = 'held' | 'released' | 'lost'

/** A lease granted by the backend, with its watchdog. */
export class HeldLease implements Lease, TimedEntry, ActiveEntry {
  readonly name: string
  readonly token: bigint
  /** Created on first use of `signal`: most leases are released without anyone reading it. */
  private controller: AbortController | undefined
  /** Why the lease was lost, kept for a `signal` first read after the loss. */
  private lostReason: LockLostError | undefined
  private state: LeaseState = 'held'
  private deadline: number
  /** When the watchdog renews next (monotonic ms); Infinity while a renewal is in flight or autoRenew is off. */
  private renewAt: number
  /** Heap slot in the context's {@link LeaseTimers}, due at the earlier of `renewAt` and `deadline`. */
  heapIndex = -1
  /** Slot in the context's {@link ActiveLeases}. */
  activeIndex = -1
  dueAt = Number.POSITIVE_INFINITY
  private releasing: Promise<void> | undefined
  private unwatch: (() => void) | undefined

  constructor(
    private readonly target: LockTarget,
    readonly owner: string,
    token: bigint,
    sentAt: number,
    private ttlMs: number,
    private readonly autoRenew: boolean,
    /** When the grant was taken (monotonic ms), for the `released` event's `heldMs`. */
    private readonly acquiredAt = monotonicNow(),
  ) {
    this.name = target.name
    this.token = token
    this.deadline = sentAt + ttlMs - driftMs(ttlMs)
    this.renewAt = autoRenew ? sentAt + ttlMs / 3 : Number.POSITIVE_INFINITY
    target.ctx.active.add(this)
    this.arm()
    this.unwatch = target.ctx.backend.watchLease?.(this.ref(), (reason) =>
      this.lose(new LockLostError(`Lost ${this.where()}: ${reason}`, { lockName: this.name })),
    )
  }

  get signal(): AbortSignal {
    this.loseIfPastDeadline()
    if (this.controller === undefined) {
      this.controller = new AbortController()
      if (this.lostReason !== undefined) this.controller.abort(this.lostReason)
    }
    return this.controller.signal
  }

  get expiresAt(): number {
    return wallTimeAt(this.deadline)
  }

  /** True until the lease is released or lost. */
  get isHeld(): boolean {
    this.loseIfPastDeadline()
    return this.state === 'held'
  }

  /**
   * Lost at once when looked at past its deadline: after a stall, due timers run in due order, so a waiter's poll in
   * this process could take the expired lock before the watchdog ran, and its code then saw this lease still held.
   */
  private loseIfPastDeadline(): void {
    if (this.state === 'held' && monotonicNow() >= this.deadline) this.lose(this.expiredError())
  }

  async extend(ttlMs?: number): Promise<void> {
    const ttl = ttlMs === undefined ? this.ttlMs : checkDuration('ttlMs', ttlMs, { min: 1, max: MAX_TIMER_MS })
    if (this.state === 'released') throw this.notHolder('it was already released')
    if (this.state === 'lost') throw this.notHolder('it was lost', this.lostReason)
    const sentAt = monotonicNow()
    const ok = await this.target.ctx.backend.renew({ ...this.ref(), ttlMs: ttl })
    if (this.state !== 'held') throw this.notHolder('it was released or lost while extending')
    if (!ok) {
      this.lose(this.lostError())
      throw this.notHolder('it expired or was taken away', this.lostReason)
    }
    this.ttlMs = ttl
    this.renewed(sentAt)
  }

  release(): Promise<void> {
    this.releasing ??= this.doRelease()
    return this.releasing
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.release()
  }

  /** Used by `Locks.close()`: releases, reporting failures as events instead of throwing. */
  async forget(): Promise<void> {
    try {
      await this.release()
    } catch (error) {
      this.emit({ type: 'release-failed', token: this.token, error })
    }
  }

  private async doRelease(): Promise<void> {
    const wasLost = this.state === 'lost'
    this.state = 'released'
    this.stopTimers()
    let ok: boolean
    try {
      ok = await this.target.ctx.backend.release(this.ref())
    } catch (error) {
      this.emit({ type: 'release-failed', token: this.token, error })
      throw error
    }
    if (!ok) {
      const error = this.notHolder(
        'it expired or was taken away; nothing was released',
        wasLost ? this.lostReason : undefined,
      )
      this.emit({ type: 'release-failed', token: this.token, error })
      throw error
    }
    if (this.target.ctx.onEvent !== undefined) {
      this.emit({ type: 'released', token: this.token, heldMs: monotonicNow() - this.acquiredAt })
    }
  }

  /** Schedules the watchdog for the next thing due: a renewal, or the deadline. */
  private arm(): void {
    const due = Math.min(this.renewAt, this.deadline)
    if (due !== this.dueAt || this.heapIndex < 0) this.target.ctx.timers.schedule(this, due)
  }

  /** Called by the context's {@link LeaseTimers} once `dueAt` has passed. */
  onDue(): void {
    if (this.state !== 'held') return
    const now = monotonicNow()
    if (now >= this.deadline) {
      this.lose(this.expiredError())
      return
    }
    if (now >= this.renewAt) void this.renewTick()
    this.arm()
  }

  private async renewTick(): Promise<void> {
    const sentAt = monotonicNow()
    // Until this renewal answers, only the deadline is due.
    this.renewAt = Number.POSITIVE_INFINITY
    let ok: boolean
    try {
      ok = await this.target.ctx.backend.renew({ ...this.ref(), ttlMs: this.ttlMs })
    } catch (error) {
      if (this.state !== 'held') return
      this.emit({ type: 'renew-failed', token: this.token, error })
      // Retry well before the deadline; the timer still aborts the signal there if no retry gets through.
      const now = monotonicNow()
      this.renewAt = now + Math.max(10, Math.min(this.ttlMs / 3, (this.deadline - now) / 3))
      this.arm()
      return
    }
    if (this.state !== 'held') return
    if (ok) this.renewed(sentAt)
    else this.lose(this.lostError())
  }

  private renewed(sentAt: number): void {
    this.deadline = sentAt + this.ttlMs - driftMs(this.ttlMs)
    this.renewAt = this.autoRenew ? sentAt + this.ttlMs / 3 : Number.POSITIVE_INFINITY
    this.arm()
    this.emit({ type: 'renewed', token: this.token, expiresAt: this.expiresAt })
  }

  /** Marks the lease lost: aborts `signal` and reports `lost`. Never throws. */
  lose(error: LockLostError): void {
    if (this.state !== 'held') return
    this.state = 'lost'
    this.stopTimers()
    this.target.ctx.active.delete(this)
    this.lostReason = error
    this.controller?.abort(error)
    this.emit({ type: 'lost', token: this.token, error })
  }

  private stopTimers(): void {
    this.target.ctx.timers.cancel(this)
    if (this.state !== 'held') {
      this.target.ctx.active.delete(this)
      this.unwatch?.()
      this.unwatch = undefined
    }
  }

  private ref() {
    return { key: this.target.key, kind: this.target.kind, owner: this.owner }
  }

  private where(): string {
    return `lock "${this.name}" (${this.target.kind}, ${this.target.ctx.backend.name} backend, token ${this.token})`
  }

  private lostError(): LockLostError {
    return new LockLostError(`Lost ${this.where()}: it was released or expired behind its holder's back`, {
      lockName: this.name,
    })
  }

  private expiredError(): LockLostError {
    const why = this.autoRenew ? 'could not be renewed before it expired' : 'expired (autoRenew is off)'
    return new LockLostError(`Lost ${this.where()}: the lease ${why}`, { lockName: this.name })
  }

  private notHolder(why: string, cause?: unknown): NotLockHolderError {
    return new NotLockHolderError(`Not the holder of ${this.where()}: ${why}`, { lockName: this.name, cause })
  }

  private emit(event: Record<string, unknown> & { type: string }): void {
    const { ctx, name, kind } = this.target
    if (ctx.onEvent === undefined) return
    emitSafely(ctx.onEvent, { ...event, name, kind, backend: ctx.backend.name } as never)
  }
}

/** A nested acquisition inside `withLock` of the same lock: shares the outer lease, counts, never does I/O. */
export class ReentrantLease implements Lease {
  private released = false

  constructor(
    private readonly outer: Lease,
    private readonly entry: { count: number },
  ) {
    entry.count++
  }

  get name(): string {
    return this.outer.name
  }
  get token(): bigint {
    return this.outer.token
  }
  get owner(): string {
    return this.outer.owner
  }
  get signal(): AbortSignal {
    return this.outer.signal
  }
  get expiresAt(): number {
    return this.outer.expiresAt
  }

  extend(ttlMs?: number): Promise<void> {
    return this.outer.extend(ttlMs)
  }

  async release(): Promise<void> {
    if (this.released) return
    this.released = true
    this.entry.count--
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.release()
  }
}
