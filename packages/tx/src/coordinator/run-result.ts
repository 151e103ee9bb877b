import type { TxError } from '../errors.js'
import type { TxStatus } from '../types.js'
import type { TxDefinition } from './definition.js'

/** Options of `run`. */
export interface RunOptions {
  /** The global transaction id. Default: a random UUID. */
  gid?: string
  /**
   * Wait for the outcome (default true). With false, `run` resolves as soon as the transaction is durably
   * submitted (status `submitted`, or `prepared` for TCC) and this coordinator drives it in the background.
   */
  wait?: boolean
}

/** What `run`, `tc.retry` and `tc.abort` resolve to. */
export interface RunResult {
  readonly gid: string
  /** `succeeded`, `failed`, `parked`; or the unfinished status when not waited for or when this coordinator stopped. */
  readonly status: TxStatus
  /** What each forward operation that succeeded returned, by branch id. */
  readonly results: Readonly<Record<string, unknown>>
  /** Why it did not succeed: `TxAbortedError`, `TxTimeoutError`, `TxParkedError`, `StaleCoordinatorError`. */
  readonly error?: TxError
}

/** Starts a new transaction of a definition (the coordinator's `start`). */
export type Starter = (
  def: TxDefinition,
  input: unknown,
  options: RunOptions | undefined,
  /** Whether the forward phase has the coordinator's `timeoutMs` deadline (TCC). */
  timed: boolean,
) => Promise<RunResult>
