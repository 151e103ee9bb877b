/** Public record types of latchkey-tx: what the store keeps and what `tc.get` / `tc.list` return. */

/**
 * The protocol of a global transaction (`msg`: transactional message; `notify`: best-effort notification; `3pc`:
 * three-phase commit; `xa`: XA two-phase commit).
 */
export type TxKind = 'saga' | 'tcc' | 'msg' | 'notify' | '3pc' | 'xa'

/** Every {@link TxKind}, for checking a kind given as text. */
export const TX_KINDS: readonly TxKind[] = ['saga', 'tcc', 'msg', 'notify', '3pc', 'xa']

/**
 * A global transaction's status: `prepared` (TCC trying; 3PC voting and pre-committing; XA phase 1) → `submitted`
 * (the commit decision) → `succeeded`, or → `aborting` →
 * `failed`; `parked` when a branch's retries ran out.
 */
export type TxStatus = 'prepared' | 'submitted' | 'aborting' | 'succeeded' | 'failed' | 'parked'

/**
 * What one branch operation is: saga `action`/`compensate`, TCC `try`/`confirm`/`cancel`, three-phase commit
 * `canCommit`/`preCommit`/`doCommit`/`abort`; a transactional message's branches are `action`s, and its
 * `check-back` asks the producer's database whether its local transaction committed.
 */
export type BranchOp =
  | 'action'
  | 'compensate'
  | 'try'
  | 'confirm'
  | 'cancel'
  | 'check-back'
  | 'canCommit'
  | 'preCommit'
  | 'doCommit'
  | 'abort'

/** A branch operation's status. */
export type BranchStatus = 'pending' | 'running' | 'succeeded' | 'failed'

/** One branch operation as stored. */
export interface BranchRecord {
  readonly id: string
  readonly op: BranchOp
  /** Position of the branch in its transaction (0-based). */
  readonly seq: number
  readonly status: BranchStatus
  readonly attempts: number
  /** What the operation returned (JSON), when it succeeded. */
  readonly result: unknown
  readonly lastError: string | null
}

/** One history entry: every state change, in write order. */
export interface HistoryEntry {
  readonly at: number
  readonly type: string
  readonly branch: string | null
  readonly op: BranchOp | null
  readonly detail: string | null
  /** The fencing token of the coordinator that wrote it. */
  readonly token: bigint
}

/** A global transaction without its branches. */
export interface TxSummary {
  readonly gid: string
  readonly kind: TxKind
  readonly name: string
  readonly status: TxStatus
  /** For a parked transaction: the status it was parked from (`submitted`, `prepared` or `aborting`). */
  readonly parkedFrom: TxStatus | null
  readonly error: string | null
  readonly createdAt: number
  readonly updatedAt: number
}

/** A global transaction as stored, with its branches and history. */
export interface TxRecord extends TxSummary {
  readonly input: unknown
  /** Epoch ms past which the forward phase aborts (TCC); null when none. */
  readonly deadlineAt: number | null
  /** The highest fencing token that has written this transaction. */
  readonly token: bigint
  readonly branches: readonly BranchRecord[]
  readonly history: readonly HistoryEntry[]
}

/** A state change reported to `onEvent`, after it was written to the store. */
export interface TxEvent {
  readonly type: string
  readonly gid: string
  readonly kind: TxKind
  readonly name: string
  readonly branch?: string | undefined
  readonly op?: BranchOp | undefined
  readonly attempt?: number | undefined
  readonly status?: TxStatus | undefined
  /** Duration of the branch call that ended, when the event ends one. */
  readonly ms?: number | undefined
  readonly error?: unknown
}
