/**
 * Every error latchkey throws on purpose extends {@link LockError}. Bad arguments are the exception:
 * they throw the standard `TypeError` / `RangeError` before any I/O.
 */

const BRAND = Symbol.for('latchkey.LockError')

/** Options common to every {@link LockError}. */
export interface LockErrorOptions {
  /** The lock name the error is about, when there is one. */
  lockName?: string | undefined
  /** The underlying error (client error, network error, ...). */
  cause?: unknown
}

/**
 * Base class of latchkey's errors.
 * `code` is stable and machine-readable; `retryable` says whether trying the same call again may work.
 *
 * @example
 * try { await lock.acquire({ waitMs: 100 }) } catch (e) { if (isLockError(e) && e.retryable) retry() }
 */
export class LockError extends Error {
  override name = 'LockError'
  readonly code: string = 'LOCK_ERROR'
  readonly retryable: boolean = false
  readonly lockName: string | undefined
  readonly [BRAND] = true

  constructor(message: string, options: LockErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.lockName = options.lockName
  }
}

/** True for any latchkey error, even one thrown by another copy of the package. */
export function isLockError(value: unknown): value is LockError {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true
}

/** The wait (`waitMs`) elapsed before the lock could be acquired. */
export class LockTimeoutError extends LockError {
  override name = 'LockTimeoutError'
  override readonly code = 'LOCK_TIMEOUT'
  override readonly retryable = true
  /** How long the caller waited, in milliseconds. */
  readonly waitedMs: number

  constructor(lockName: string, waitedMs: number, options: LockErrorOptions = {}) {
    super(`Lock "${lockName}" was not acquired within ${Math.round(waitedMs)} ms; raise waitMs or find the holder`, {
      ...options,
      lockName,
    })
    this.waitedMs = waitedMs
  }
}

/** A held lease was lost: it expired, was released behind the holder's back, or could not be renewed in time. */
export class LockLostError extends LockError {
  override name = 'LockLostError'
  override readonly code = 'LOCK_LOST'
  override readonly retryable = false
}

/** The caller does not hold the lock it tried to release or extend (it expired and may have a new holder). */
export class NotLockHolderError extends LockError {
  override name = 'NotLockHolderError'
  override readonly code = 'NOT_LOCK_HOLDER'
  override readonly retryable = false
}

/** A fenced resource saw a token lower than one it already admitted. */
export class StaleTokenError extends LockError {
  override name = 'StaleTokenError'
  override readonly code = 'STALE_TOKEN'
  override readonly retryable = false
  readonly token: bigint
  readonly highestSeen: bigint

  constructor(lockName: string, token: bigint, highestSeen: bigint, options: LockErrorOptions = {}) {
    super(`Fencing token ${token} for "${lockName}" is stale: token ${highestSeen} was already admitted`, {
      ...options,
      lockName,
    })
    this.token = token
    this.highestSeen = highestSeen
  }
}

/** The outcome of one node in a quorum operation. */
export interface NodeOutcome {
  node: string
  outcome: 'acquired' | 'held' | 'timeout' | 'error'
  error?: unknown
}

/** A quorum backend could not get a majority of its nodes to agree. */
export class QuorumNotReachedError extends LockError {
  override name = 'QuorumNotReachedError'
  override readonly code = 'QUORUM_NOT_REACHED'
  override readonly retryable = true
  readonly nodes: readonly NodeOutcome[]

  constructor(message: string, nodes: readonly NodeOutcome[], options: LockErrorOptions = {}) {
    super(message, options)
    this.nodes = nodes
  }
}

/** The backend's server could not be reached or failed; trying again later may work. */
export class BackendUnavailableError extends LockError {
  override name = 'BackendUnavailableError'
  override readonly code = 'BACKEND_UNAVAILABLE'
  override readonly retryable = true
}

/** The backend (or this combination of options) does not support what was asked. */
export class UnsupportedError extends LockError {
  override name = 'UnsupportedError'
  override readonly code = 'UNSUPPORTED'
  override readonly retryable = false
}

/** The `Locks` instance was closed while the call was pending or before it started. */
export class LocksClosedError extends LockError {
  override name = 'LocksClosedError'
  override readonly code = 'LOCKS_CLOSED'
  override readonly retryable = false
}

/**
 * A semaphore was asked for with a permit count other than the one in force. The count is stored with the
 * semaphore while it has a holder (or a waiter the backend keeps in line); the next acquirer after it goes idle
 * defines it again. Not retryable: the same call keeps failing until every holder of the other count is gone.
 *
 * @example
 * try { await locks.semaphore('jobs', { permits: 5 }).acquire() }
 * catch (e) { if (e instanceof PermitsMismatchError) console.error(e.permitsInForce) }
 */
export class PermitsMismatchError extends LockError {
  override name = 'PermitsMismatchError'
  override readonly code = 'PERMITS_MISMATCH'
  override readonly retryable = false
  /** The count the caller asked for. */
  readonly permits: number
  /** The count the semaphore's current holders agreed on. */
  readonly permitsInForce: number

  constructor(lockName: string, permits: number, permitsInForce: number, options: LockErrorOptions = {}) {
    super(
      `Semaphore "${lockName}" was asked for with permits ${permits}, but permits ${permitsInForce} is in force ` +
        'while it has holders; use one count for one semaphore name',
      { ...options, lockName },
    )
    this.permits = permits
    this.permitsInForce = permitsInForce
  }
}
