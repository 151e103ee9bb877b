import type { TxKind, TxStatus } from '../types.js'

/**
 * What the coordinator knows of each protocol apart from its definition: a stored record names only its kind, and
 * `tc.abort`, `start` and recovery must agree on these for every transaction of that kind.
 */
export interface KindTraits {
  /** The status a new transaction is written with. */
  readonly initial: TxStatus
  /**
   * Its forward phase, the only one `tc.abort` may turn into `aborting`. A TCC's, 3PC's or XA's is `prepared`
   * (their `submitted` is the commit decision, never aborted); a saga's, a message's and a notification's is
   * `submitted` (aborting the last two gives up delivery). A message starts `prepared` (its local transaction has
   * not committed yet), which only its check-back settles.
   */
  readonly forward: TxStatus
  /**
   * Whether the create may ride on the first write of the drive. A saga's or a TCC's first act is a branch call,
   * which is itself logged; the others act before their first write (a message's local transaction, XA's branch
   * connections, 3PC's votes, a notification's delivery), so the log must hold them first.
   */
  readonly createWithFirstWrite: boolean
}

export const KIND_TRAITS: Readonly<Record<TxKind, KindTraits>> = {
  saga: { initial: 'submitted', forward: 'submitted', createWithFirstWrite: true },
  tcc: { initial: 'prepared', forward: 'prepared', createWithFirstWrite: true },
  msg: { initial: 'prepared', forward: 'submitted', createWithFirstWrite: false },
  notify: { initial: 'submitted', forward: 'submitted', createWithFirstWrite: false },
  '3pc': { initial: 'prepared', forward: 'prepared', createWithFirstWrite: false },
  xa: { initial: 'prepared', forward: 'prepared', createWithFirstWrite: false },
}
