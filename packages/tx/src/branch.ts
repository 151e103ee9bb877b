import type { BranchOp } from './types.js'

/** What a branch function receives. */
export interface BranchContext<I = unknown> {
  /** The global transaction id: pass it (with `branch` and `op`) to the participant's barrier. */
  readonly gid: string
  /** The branch (saga step, TCC participant) id. */
  readonly branch: string
  readonly op: BranchOp
  /** The transaction's input, as given to `run` (after a JSON round trip when resumed by recovery). */
  readonly input: I
  /** 1 for the first call of this operation, then 2, 3 ... (it survives coordinator restarts). */
  readonly attempt: number
  /** Aborted when this coordinator loses its lease on the transaction or closes: stop and let recovery go on. */
  readonly signal: AbortSignal
  /** What the forward operations that succeeded so far returned, by branch id. */
  readonly results: Readonly<Record<string, unknown>>
}

/**
 * A branch operation. It may run more than once (retries, recovery after a crash): make it idempotent, e.g.
 * with `barrier` from `latchkey-tx/barrier`. Its result is stored as JSON. A forward operation (saga action,
 * TCC try) that throws has failed and the transaction aborts, unless the error has `retryable: true`, which
 * asks for another try. Compensations, confirms and cancels must eventually succeed: any error is retried.
 */
export type BranchFn<I = unknown, R = unknown> = (ctx: BranchContext<I>) => R | Promise<R>

/** Whether a thrown value asks for another try (`retryable: true`, like `TxError` and latchkey's errors). */
export function isRetryable(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { retryable?: unknown }).retryable === true
}

/** Checks that `fn` is a function, naming it in the TypeError. */
export function checkBranchFn(what: string, fn: unknown): BranchFn {
  if (typeof fn !== 'function') {
    throw new TypeError(`latchkey-tx: ${what} must be a function (ctx) => result, received ${typeof fn}`)
  }
  return fn as BranchFn
}

const ID = /^[A-Za-z0-9_.:@/-]{1,128}$/

/** Checks a gid, step or participant id: 1 to 128 of `A-Z a-z 0-9 _ . : @ / -`. */
export function checkId(what: string, id: unknown): string {
  if (typeof id !== 'string' || !ID.test(id)) {
    throw new RangeError(
      `latchkey-tx: ${what} must be 1 to 128 characters of A-Z a-z 0-9 _ . : @ / -, received ${JSON.stringify(id)}`,
    )
  }
  return id
}
