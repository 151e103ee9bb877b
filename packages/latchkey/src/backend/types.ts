/**
 * The backend contract: the few atomic primitives a lock server must offer. The core owns all policy
 * (waiting, retries, watchdog, reentrancy, abort handling); a backend only answers these calls.
 * A third-party backend implements {@link Backend} and proves itself with `latchkey/testing`.
 */

import type { ListRequest, LockInspection, LockSummary } from './inspection.js'

/** Kinds of lock handle. `mutex`, `fair` and `write` are exclusive; `read` is shared; `semaphore` counts permits. */
export type LockKind = 'mutex' | 'fair' | 'read' | 'write' | 'semaphore'

/** What a backend can do; the core and the conformance suite adapt to it. */
export interface BackendCapabilities {
  /** `native`: tokens strictly increase per lock name across all holders and processes. `none`: tokens are `0n`. */
  readonly fencing: 'native' | 'none'
  /** How waiters learn of releases: pushed to every process, only within this process, or not at all (polling). */
  readonly notifications: 'global' | 'process' | 'none'
  /** Lock kinds the backend implements. */
  readonly kinds: readonly LockKind[]
  /** Whether the lock state is shared by several OS processes (false for the in-memory backend). */
  readonly crossProcess: boolean
  /** Whether `lockDelayMs` is honoured (an expired, unreleased lock stays unavailable that long). */
  readonly lockDelay: boolean
  /** Whose clock measures leases: the server's, the host's (shared by local processes), or this process's. */
  readonly clock: 'server' | 'host' | 'process'
  /**
   * What `inspect` and `list` report of the waiters: every waiting acquire (`all`: ZooKeeper nodes, etcd keys,
   * Redis watchers), only those keeping a place in line (`queued`: fair locks and waiting writers), or none
   * (`none`: the backend stores no waiters, or cannot inspect).
   */
  readonly waiters: 'all' | 'queued' | 'none'
  /** Whether `inspect` is implemented (otherwise it rejects with `UnsupportedError`). */
  readonly inspect: boolean
  /**
   * Whether `list` is implemented: false where the server stores only a hash of each name (GET_LOCK, advisory
   * locks), which cannot be turned back into names.
   */
  readonly list: boolean
}

/** Identifies one lock's state in the backend. */
export interface LockRef {
  /** The lock name, already namespaced by the core (`namespace:name`). */
  readonly key: string
  readonly kind: LockKind
}

/** A request for one lease. */
export interface AcquireRequest extends LockRef {
  /** Unique per lease attempt; the owner id written into the backend. */
  readonly owner: string
  /** Lease length. */
  readonly ttlMs: number
  /** Semaphore size (1 for the other kinds). */
  readonly permits: number
  /** After the lease expires unreleased, keep the lock unavailable this much longer (Chubby's lock-delay). */
  readonly lockDelayMs: number
  /**
   * When true and not granted, keep (or refresh) this owner's place in line for `queueTtlMs`.
   * Used by fair locks (FIFO) and by write locks (a waiting writer blocks new readers).
   */
  readonly queue: boolean
  readonly queueTtlMs: number
}

/** The answer to {@link Backend.tryAcquire}. */
export type AcquireResult =
  | {
      readonly acquired: true
      readonly token: bigint
      /**
       * Set when the lease began before this try was sent (a release handed the lock to this waiter): a
       * monotonic instant (`performance.now()`) no later than the grant. The lease is timed from it.
       */
      readonly grantedAt?: number | undefined
    }
  | {
      readonly acquired: false
      /**
       * When to try again at the latest, if known: when the blocking holder's lease (plus lock-delay) ends, or a
       * backend's own spacing for a conflict nobody holds (RedLock's split vote). A bound for the core's poll.
       */
      readonly retryAfterMs?: number | undefined
      /**
       * Set (semaphores only) when the semaphore's holders use another permit count than `request.permits`:
       * the count in force. The core then rejects with `PermitsMismatchError` instead of waiting. The check and
       * the grant must be one atomic step, so two first acquirers with different counts never both win.
       */
      readonly permitsInForce?: number | undefined
    }

/** Names one holder of one lock. */
export interface HolderRef extends LockRef {
  readonly owner: string
}

/** A request to extend a held lease. */
export interface RenewRequest extends HolderRef {
  readonly ttlMs: number
}

/**
 * A subscription to release notifications for one lock, opened *before* the first try so that a release
 * between a failed try and the wait is not missed: `wait` returns at once if one arrived since the last wait.
 */
export interface ReleaseSubscription {
  /** Resolves on a release notification or after `timeoutMs`; rejects with `signal.reason` on abort. */
  wait(timeoutMs: number, signal?: AbortSignal): Promise<void>
  close(): void
  /**
   * Optional. A grant this waiter can take without a request, taken synchronously right after every wake-up (a
   * notification's or a timeout's): the core uses it as its next try's answer and sends no try. Either the release
   * made the grant and told it with the notification (Redis), or the subscription's own state shows it (etcd: the
   * watch saw every key ahead go). Undefined when there is none (the core then tries as usual). What it returns must
   * be exactly what `tryAcquire` would have answered then.
   */
  takeGrant?(): AcquireResult | undefined
}

/**
 * What the core passes with a backend call besides its request. A backend MAY ignore it, and one written before
 * it existed keeps working unchanged.
 */
export interface CallOptions {
  /**
   * Aborts when the core abandons the call: it outlasted the acquire's hard deadline (`waitMs`, or
   * `unavailableMs` of backend silence), the caller has been answered, and whatever the call still grants is
   * given back when it settles. Honouring it is an optimisation (stop waiting for a connection, skip a retry);
   * an aborted call may reject with `signal.reason` or finish normally.
   */
  readonly signal?: AbortSignal
}

/** The primitives every backend implements. All methods may reject with `BackendUnavailableError`. */
export interface Backend {
  /** Short name used in messages and events, e.g. `sqlite`. */
  readonly name: string
  readonly capabilities: BackendCapabilities
  /**
   * Grants a lease if the lock kind's rules allow it now. Never waits for a holder and never retries after a
   * pause: spacing tries (`retryAfterMs`, jittered backoff, notifications) is the core's waiting policy, which the
   * caller can abort. One attempt may still take a network round trip or a quorum round.
   */
  tryAcquire(request: AcquireRequest, options?: CallOptions): Promise<AcquireResult>
  /** Extends a lease still held by `owner` (and not expired); false when it is not. Never creates state. */
  renew(request: RenewRequest): Promise<boolean>
  /** Releases `owner`'s lease; false (and no effect) when `owner` does not hold it. */
  release(request: HolderRef): Promise<boolean>
  /**
   * Called when a waiting acquire of any kind gives up (timeout, abort, `close()`): drops whatever `owner` keeps
   * while waiting (its place in line, a waiting node or key). A no-op when it keeps nothing.
   */
  leaveQueue(request: HolderRef): Promise<void>
  /** Whether the lock is held by anyone (for a semaphore: whether all `permits` are taken). */
  isLocked(ref: LockRef & { readonly permits: number }): Promise<boolean>
  /** Administrative: drops every holder and waiter of the lock (Redisson's forceUnlock). True if anything was held. */
  forceRelease(ref: LockRef): Promise<boolean>
  /**
   * Administrative, optional (`capabilities.inspect`): the holders and stored waiters of lock key `key`, of the
   * mutex/read-write family and of the semaphore. Reads only; expired holders are left out.
   */
  inspect?(key: string): Promise<LockInspection>
  /** Administrative, optional (`capabilities.list`): the locks held or waited on whose key starts with `prefix`. */
  list?(request: ListRequest): Promise<LockSummary[]>
  /**
   * Present when `capabilities.notifications` is not `none`. Called once per waiting acquire, before its first
   * try, with the acquire request itself as `ref` and its `owner`, so a backend that keeps waiters in line
   * (ZooKeeper, etcd) can feed the subscription from that waiter's own predecessor watch.
   */
  subscribe?(ref: LockRef, owner?: string): ReleaseSubscription
  /**
   * Optional: calls `onLost` (once) when `holder`'s lease is lost before it is released (its session ended, its
   * connection dropped, its state was deleted). The core then aborts `lease.signal` at once instead of at the
   * next renewal. Returns a function that stops watching.
   */
  watchLease?(holder: HolderRef, onLost: (reason: string) => void): () => void
  /** Frees what the backend opened itself (never a client handed to it). */
  close(): Promise<void>
}
