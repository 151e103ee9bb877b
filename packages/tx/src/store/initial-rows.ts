import { TxError } from '../errors.js'
import type { BranchStatus, TxStatus } from '../types.js'
import type { HistoryEvent, NewTx, TxChange } from './types.js'

/** The rows a create inserts: the new transaction with its first transition (if any) already applied. */
export interface InitialRows {
  readonly status: TxStatus
  readonly parkedFrom: TxStatus | null
  readonly error: string | null
  readonly leaseMs: number | undefined
  readonly branches: readonly {
    readonly id: string
    readonly op: string
    readonly seq: number
    readonly status: BranchStatus
    readonly attempts: number
    /** JSON text. */
    readonly result: string | null
    readonly lastError: string | null
  }[]
  /** History entries in order: `created`, then the first transition's. */
  readonly events: readonly HistoryEvent[]
}

/**
 * Applies `first` to the rows of `tx` before they are inserted, so that creating a transaction and its first
 * transition (the first branch marked running) are one write; a `first` naming an unknown branch is refused
 * (`NOT_FOUND`) before any I/O, as {@link TxStore.write} refuses it.
 */
export function initialRows(tx: NewTx, first: TxChange | undefined): InitialRows {
  const branches = tx.branches.map((b) => ({
    id: b.id,
    op: b.op as string,
    seq: b.seq,
    status: 'pending' as BranchStatus,
    attempts: 0,
    result: null as string | null,
    lastError: null as string | null,
  }))
  for (const c of first?.branches ?? []) {
    const b = branches.find((x) => x.id === c.id && x.op === c.op)
    if (b === undefined) {
      throw new TxError(`Transaction ${tx.gid} has no branch "${c.id}" (${c.op})`, { code: 'NOT_FOUND', gid: tx.gid })
    }
    if (c.status !== undefined) b.status = c.status
    if (c.attempts !== undefined) b.attempts = c.attempts
    if (c.result !== undefined) b.result = JSON.stringify(c.result)
    if (c.lastError !== undefined) b.lastError = c.lastError
  }
  const created: HistoryEvent = { type: 'created', detail: tx.status }
  return {
    status: first?.status ?? tx.status,
    parkedFrom: first?.parkedFrom ?? null,
    error: first?.error ?? null,
    leaseMs: first?.leaseMs ?? tx.leaseMs,
    branches,
    events: first === undefined ? [created] : [created, ...(first.earlier ?? []), first.event],
  }
}
