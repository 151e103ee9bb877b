import type { LockKind } from '../backend/types.js'
import { type AcquireSettings, acquireLease } from './acquire.js'
import type { LocksContext, LockTarget } from './context.js'
import { emitSafely } from './events.js'
import { type Lease, ReentrantLease } from './lease.js'
import { findHeld, type HeldEntry, runHolding } from './reentrancy.js'
import {
  checkBoolean,
  checkDuration,
  checkFunction,
  checkOptions,
  checkSignal,
  checkUnavailableMs,
  MAX_TIMER_MS,
} from './validate.js'

/** Options of `acquire`, `tryAcquire` and `withLock`. Unset fields take the `createLocks` defaults. */
export interface AcquireOptions {
  /** How long to wait for the lock (default from `createLocks`, itself `Infinity`). Ignored by `tryAcquire`. */
  waitMs?: number
  /** Lease length (default from `createLocks`, itself 30 000). */
  ttlMs?: number
  /** Renew the lease every `ttlMs / 3` while held (default true). */
  autoRenew?: boolean
  /** Abort the wait: the call rejects with `signal.reason` and leaves nothing held or queued. */
  signal?: AbortSignal
  /**
   * Reject with `BackendUnavailableError` once the backend has answered nothing at all (not even "held") for this
   * long, even when `waitMs` is `Infinity` (default from `createLocks`, itself 30 000).
   */
  unavailableMs?: number
}

/**
 * A handle on one named lock. Creating it does no I/O.
 *
 * @example
 * const lock = locks.mutex('order:42')
 * await lock.withLock(async (lease) => pay(order, { signal: lease.signal }))
 */
export interface Lock {
  readonly name: string
  /**
   * Waits up to `waitMs` (a hard deadline) for the lock; rejects with `LockTimeoutError` when the wait runs out
   * while the lock is held, with `BackendUnavailableError` when the backend failed or did not answer instead.
   */
  acquire(options?: AcquireOptions): Promise<Lease>
  /** Takes the lock if it is free right now; `undefined` otherwise. Never waits. */
  tryAcquire(options?: Omit<AcquireOptions, 'waitMs'>): Promise<Lease | undefined>
  /** Acquires, runs `fn` (renewing the lease meanwhile), and releases when `fn` settles. */
  withLock<T>(fn: (lease: Lease) => Promise<T> | T, options?: AcquireOptions): Promise<T>
  /** Whether anyone holds the lock now (for a semaphore: whether every permit is taken). */
  isLocked(): Promise<boolean>
}

/** Validates acquire options once, filling defaults from the `Locks` context. */
export function resolveSettings(ctx: LocksContext, options: unknown, waitForIt: boolean): AcquireSettings {
  const o = checkOptions('options', options)
  return {
    waitMs:
      waitForIt && o.waitMs !== undefined
        ? checkDuration('waitMs', o.waitMs, { infinite: true })
        : waitForIt
          ? ctx.waitMs
          : 0,
    ttlMs: o.ttlMs === undefined ? ctx.ttlMs : checkDuration('ttlMs', o.ttlMs, { min: 1, max: MAX_TIMER_MS }),
    autoRenew: o.autoRenew === undefined ? true : checkBoolean('autoRenew', o.autoRenew),
    signal: o.signal === undefined ? undefined : checkSignal('signal', o.signal),
    unavailableMs: o.unavailableMs === undefined ? ctx.unavailableMs : checkUnavailableMs(o.unavailableMs),
    orUndefined: !waitForIt,
  }
}

/** The lock handle behind `mutex`, `fairMutex`, `readWrite` and `semaphore`. */
export class LockHandle implements Lock, LockTarget {
  constructor(
    readonly ctx: LocksContext,
    readonly name: string,
    readonly key: string,
    readonly kind: LockKind,
    readonly permits: number,
  ) {}

  // Not async: acquireLease's own promise is returned as is, since one more async layer costs every acquire a
  // promise and a few microtask turns. Bad options still reject rather than throw.
  acquire(options?: AcquireOptions): Promise<Lease> {
    try {
      const settings = resolveSettings(this.ctx, options, true)
      const reentered = this.reenter()
      if (reentered !== undefined) return Promise.resolve(reentered)
      return acquireLease(this, settings) as Promise<Lease>
    } catch (error) {
      return Promise.reject(error)
    }
  }

  tryAcquire(options?: Omit<AcquireOptions, 'waitMs'>): Promise<Lease | undefined> {
    try {
      const settings = resolveSettings(this.ctx, options, false)
      const reentered = this.reenter()
      if (reentered !== undefined) return Promise.resolve(reentered)
      return acquireLease(this, settings)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  async withLock<T>(fn: (lease: Lease) => Promise<T> | T, options?: AcquireOptions): Promise<T> {
    checkFunction('fn', fn)
    const settings = resolveSettings(this.ctx, options, true)
    const entry = findHeld(this)
    if (entry !== undefined) {
      const lease = new ReentrantLease(entry.lease, entry)
      try {
        return await fn(lease)
      } finally {
        await lease.release()
      }
    }
    const lease = (await acquireLease(this, settings)) as Lease
    return runWithLeases([[this, lease]], fn.bind(undefined, lease))
  }

  isLocked(): Promise<boolean> {
    return this.ctx.backend.isLocked({ key: this.key, kind: this.kind, permits: this.permits })
  }

  private reenter(): Lease | undefined {
    const entry = findHeld(this)
    if (entry === undefined) return undefined
    emitSafely(this.ctx.onEvent, {
      type: 'acquired',
      name: this.name,
      kind: this.kind,
      backend: this.ctx.backend.name,
      token: entry.lease.token,
      waitedMs: 0,
      reentrant: true,
    })
    return new ReentrantLease(entry.lease, entry)
  }
}

/**
 * Runs `fn` holding `leases` (visible to nested calls for reentrancy), then releases them all, whether or not
 * `fn` watched `lease.signal`. A release failure never changes the outcome: once `fn` has settled, its work is
 * done (a committed write cannot be taken back), so its result or its error is what the caller gets. The failure
 * is reported as a `release-failed` event (and a lease lost on the way as `lost`); an unreleased lease expires
 * by itself at the end of its TTL.
 */
export async function runWithLeases<T>(
  pairs: ReadonlyArray<readonly [LockTarget, Lease]>,
  fn: () => Promise<T> | T,
): Promise<T> {
  const entries = pairs.map(([target, lease]) => [target, { lease, count: 1 } satisfies HeldEntry] as const)
  try {
    return await runHolding(entries, fn)
  } finally {
    await releaseAll(pairs)
  }
}

/** Releases every lease (in reverse order); each lease reports its own failure as a `release-failed` event. */
async function releaseAll(pairs: ReadonlyArray<readonly [LockTarget, Lease]>): Promise<void> {
  for (const [, lease] of [...pairs].reverse()) await lease.release().catch(() => undefined)
}
