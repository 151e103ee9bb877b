/** Rows of the log's three tables as the drivers return them, read back into records (column names as in schema.ts). */
import type { BranchOp, BranchRecord, BranchStatus, HistoryEntry, TxKind, TxStatus, TxSummary } from '../types.js'
import type { Row } from './sql-driver.js'

/** A JSON column: undefined for SQL NULL. */
export const parse = (value: unknown): unknown =>
  value === null || value === undefined ? undefined : JSON.parse(String(value))
/** An integer column (the drivers return BIGINT as a string or a number). */
export const int = (value: unknown): number => Number(value)
const nullable = (value: unknown): string | null => (value === null || value === undefined ? null : String(value))

/** A row of `global`. */
export function summary(g: Row): TxSummary {
  return {
    gid: String(g.gid),
    kind: String(g.kind) as TxKind,
    name: String(g.name),
    status: String(g.status) as TxStatus,
    parkedFrom: nullable(g.parked_from) as TxStatus | null,
    error: nullable(g.error),
    createdAt: int(g.created_at),
    updatedAt: int(g.updated_at),
  }
}

/** A row of `branch`. */
export function branch(b: Row): BranchRecord {
  return {
    id: String(b.branch),
    op: String(b.op) as BranchOp,
    seq: int(b.seq),
    status: String(b.status) as BranchStatus,
    attempts: int(b.attempts),
    result: parse(b.result),
    lastError: nullable(b.last_error),
  }
}

/** A row of `history`. */
export function entry(h: Row): HistoryEntry {
  return {
    at: int(h.at),
    type: String(h.type),
    branch: nullable(h.branch),
    op: nullable(h.op) as BranchOp | null,
    detail: nullable(h.detail),
    token: BigInt(String(h.fence)),
  }
}
