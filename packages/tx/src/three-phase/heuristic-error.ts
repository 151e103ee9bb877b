import { TxError } from '../errors.js'

/**
 * A three-phase commit ended with a mixed outcome: some participants committed while the others aborted. 3PC
 * cannot prevent it when a partition splits the participants (the pre-committed side commits on its timeout,
 * the other side aborts); the coordinator detects it from the participants' answers (`latchkey-tx`'s
 * `threePhaseParticipant` reports what it did on its own) and says which did what. Named after XA's
 * heuristic-mixed outcome: a human has to repair the data.
 */
export class TxHeuristicError extends TxError {
  override name = 'TxHeuristicError'
  /** Participants that committed. */
  readonly committed: readonly string[]
  /** Participants that aborted. */
  readonly aborted: readonly string[]

  constructor(gid: string, committed: readonly string[], aborted: readonly string[]) {
    super(
      `Transaction ${gid} has a mixed (heuristic) outcome: ${committed.join(', ')} committed while ` +
        `${aborted.join(', ')} aborted; repair the data by hand`,
      { code: 'TX_HEURISTIC_MIXED', gid },
    )
    this.committed = committed
    this.aborted = aborted
  }
}
