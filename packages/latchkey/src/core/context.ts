import type { Backend, LockKind, LockRef } from '../backend/types.js'
import type { ActiveLeases } from './active-leases.js'
import type { LockEventHandler } from './events.js'
import type { LeaseTimers } from './lease-timers.js'

/** What a lock handle needs from its `Locks` instance. */
export interface LocksContext {
  readonly backend: Backend
  readonly id: number
  readonly namespace: string
  readonly ttlMs: number
  readonly waitMs: number
  readonly unavailableMs: number
  readonly lockDelayMs: number
  readonly queueTtlMs: number
  readonly maxPollMs: number
  readonly onEvent: LockEventHandler | undefined
  /** Aborts when `close()` is called. */
  readonly closing: AbortSignal
  /** The leases held, released by `close()`. */
  readonly active: ActiveLeases
  /** The watchdog clock shared by this context's leases. */
  readonly timers: LeaseTimers
  /** The deadlines of this context's in-flight tries (a clock that keeps the process alive while one is due). */
  readonly tries: LeaseTimers
}

/** A lock as the core sees it: its context, public name, backend ref and semaphore size. */
export interface LockTarget extends LockRef {
  readonly ctx: LocksContext
  readonly name: string
  readonly kind: LockKind
  readonly permits: number
}
