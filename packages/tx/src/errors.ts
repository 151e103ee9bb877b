/**
 * Every error latchkey-tx throws on purpose extends {@link TxError}. Bad arguments are the exception: they throw
 * the standard `TypeError` / `RangeError` before any I/O.
 */

const BRAND = Symbol.for('latchkey-tx.TxError')

/** Options common to every {@link TxError}. */
export interface TxErrorOptions {
  /** Stable machine-readable code. Default `TX_ERROR`. */
  code?: string
  /** Whether trying the same call again may work. Default false. */
  retryable?: boolean
  /** The global transaction the error is about. */
  gid?: string | undefined
  /** The underlying error. */
  cause?: unknown
}

/**
 * Base class of latchkey-tx's errors. A branch function may throw one with `retryable: true` to ask the
 * coordinator to try it again later (a forward step that throws anything else has failed for good).
 *
 * @example
 * throw new TxError('stock service busy', { code: 'STOCK_BUSY', retryable: true })
 */
export class TxError extends Error {
  override name = 'TxError'
  readonly code: string
  readonly retryable: boolean
  readonly gid: string | undefined
  readonly [BRAND] = true

  constructor(message: string, options: TxErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = options.code ?? 'TX_ERROR'
    this.retryable = options.retryable ?? false
    this.gid = options.gid
  }
}

/** True for any latchkey-tx error, even one thrown by another copy of the package. */
export function isTxError(value: unknown): value is TxError {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true
}

/** A forward step (saga action, TCC try) failed; every compensation (cancel) has been done. */
export class TxAbortedError extends TxError {
  override name = 'TxAbortedError'
  /** The step whose failure aborted the transaction. */
  readonly branch: string | undefined

  constructor(gid: string, branch: string | undefined, cause: unknown) {
    super(
      `Transaction ${gid} aborted${branch === undefined ? '' : ` at "${branch}"`}: ${describe(cause)}; compensation done`,
      { code: 'TX_ABORTED', gid, cause },
    )
    this.branch = branch
  }
}

/** A branch kept failing after every retry: the transaction waits for a human (`tc.retry(gid)` / `tc.abort(gid)`). */
export class TxParkedError extends TxError {
  override name = 'TxParkedError'
  readonly branch: string
  readonly op: string

  constructor(gid: string, branch: string, op: string, attempts: number, cause: unknown) {
    super(
      `Transaction ${gid} parked: ${op} of "${branch}" failed ${attempts} times (${describe(cause)}); ` +
        // A forward step may still be given up; a compensation, confirm or cancel must eventually succeed.
        (op === 'action' || op === 'try'
          ? 'fix the cause, then call tc.retry(gid), or tc.abort(gid) to compensate'
          : 'fix the cause, then call tc.retry(gid)'),
      { code: 'TX_PARKED', gid, cause },
    )
    this.branch = branch
    this.op = op
  }
}

/** The forward phase outlived `timeoutMs`; the transaction was aborted. */
export class TxTimeoutError extends TxError {
  override name = 'TxTimeoutError'

  constructor(gid: string, timeoutMs: number) {
    super(`Transaction ${gid} did not finish its forward phase within ${timeoutMs} ms; aborted`, {
      code: 'TX_TIMEOUT',
      gid,
    })
  }
}

/** This coordinator's recovery lease was overtaken: another coordinator now owns the transaction. */
export class StaleCoordinatorError extends TxError {
  override name = 'StaleCoordinatorError'
  readonly token: bigint
  readonly current: bigint

  constructor(gid: string, token: bigint, current: bigint) {
    super(
      `Transaction ${gid}: this coordinator's lease (token ${token}) was overtaken by token ${current}; ` +
        'its write was refused and another coordinator continues the transaction',
      { code: 'STALE_COORDINATOR', gid },
    )
    this.token = token
    this.current = current
  }
}

/** A short text for an unknown thrown value. */
export function describe(error: unknown): string {
  if (error instanceof Error) return error.message
  return String(error)
}
