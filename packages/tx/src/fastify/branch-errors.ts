/** What a participant's handler throws to choose its answer: 409 (business failure) or 425 (ongoing). */

/**
 * A business refusal (insufficient funds, out of stock): the plugin answers 409, the coordinator aborts the
 * transaction (from a saga action or a TCC try). The local transaction is rolled back, the barrier row with it,
 * so the compensation that follows finds nothing to undo.
 *
 * @example
 * if (balance < amount) throw new BranchFailure('insufficient funds')
 */
export class BranchFailure extends Error {
  override readonly name = 'BranchFailure'
  /** Marks the error across copies of the package (instanceof fails between two installed copies). */
  readonly branchFailure = true
}

/**
 * "Not finished yet, ask again later": the plugin answers 425 and the coordinator retries with its backoff. The
 * local transaction is rolled back, so the next call runs the handler again.
 */
export class BranchOngoing extends Error {
  override readonly name = 'BranchOngoing'
  readonly branchOngoing = true
}

/** Whether `error` is a {@link BranchFailure} (also from another copy of the package). */
export function isBranchFailure(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { branchFailure?: unknown }).branchFailure === true
}

/** Whether `error` is a {@link BranchOngoing}. */
export function isBranchOngoing(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { branchOngoing?: unknown }).branchOngoing === true
}
