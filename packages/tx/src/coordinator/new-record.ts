import type { NewTx, TxStore } from '../store/types.js'
import type { BranchRecord, TxRecord } from '../types.js'
import type { RowStore } from './row-lease.js'

/** Whether the store keeps row leases (SQL stores do); otherwise the coordinator takes latchkey leases. */
export const hasRowLeases = (store: TxStore): store is RowStore =>
  typeof store.claim === 'function' && typeof store.renew === 'function' && typeof store.release === 'function'

/**
 * The record of a transaction just created, built here instead of read back: its input as the log returns it
 * (the JSON round trip), so a first run and a recovered one see the same input.
 */
export function newRecord(tx: NewTx, token: bigint): TxRecord {
  const now = Date.now()
  const branches: BranchRecord[] = tx.branches.map((b) => ({
    ...b,
    status: 'pending',
    attempts: 0,
    result: undefined,
    lastError: null,
  }))
  const input = tx.input === undefined ? undefined : JSON.parse(JSON.stringify(tx.input))
  return {
    gid: tx.gid,
    kind: tx.kind,
    name: tx.name,
    status: tx.status,
    parkedFrom: null,
    error: null,
    createdAt: now,
    updatedAt: now,
    input,
    deadlineAt: tx.deadlineAt,
    token,
    branches,
    history: [],
  }
}
