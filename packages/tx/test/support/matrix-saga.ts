/**
 * The saga (steps a, b, c) and the TCC (participants x, y) of the crash matrix and the fault-matrix tests, and
 * the scenarios that drive them through every phase. Each operation counts its invocation in the SQLite
 * ledger (outside the barrier) and applies its effect through the barrier, so a test tells "called again"
 * from "applied twice". Deterministic: which operation fails, flakes once or never succeeds is in the input.
 */
import Database from 'better-sqlite3'
import { type BranchContext, type Coordinator, type Saga, type Tcc, TxError, type TxStatus } from '../../src/index.js'
import { applyEffect } from './crash-saga.js'

/** What the transaction's operations do, by `step:op` (`failAt` names a step whose forward operation fails). */
export interface MatrixInput {
  /** Step (or participant) whose action (try) fails for good. */
  readonly failAt?: string
  /** `step:op` that fails with a retryable error on its first attempt only. */
  readonly flakeAt?: string
  /** `step:op` that fails with a retryable error on every attempt (the transaction parks). */
  readonly stuckAt?: string
}

/** A transaction shape driven through one phase, with the outcome an uninterrupted run has. */
export interface MatrixScenario {
  readonly name: string
  readonly kind: 'saga' | 'tcc'
  readonly input: MatrixInput
  readonly status: TxStatus
  /** The effects applied once each at the end, as `step:op`. */
  readonly effects: readonly string[]
}

/** Saga forward, saga compensation, a parked saga, TCC try + confirm, TCC try + cancel; each with one retry. */
export const SCENARIOS: readonly MatrixScenario[] = [
  {
    name: 'saga-forward',
    kind: 'saga',
    input: { flakeAt: 'b:action' },
    status: 'succeeded',
    effects: ['a:action', 'b:action', 'c:action'],
  },
  {
    name: 'saga-compensation',
    kind: 'saga',
    input: { failAt: 'c', flakeAt: 'b:compensate' },
    status: 'failed',
    effects: ['a:action', 'b:action', 'b:compensate', 'a:compensate'],
  },
  { name: 'saga-parked', kind: 'saga', input: { stuckAt: 'b:action' }, status: 'parked', effects: ['a:action'] },
  {
    name: 'tcc-confirm',
    kind: 'tcc',
    input: { flakeAt: 'x:confirm' },
    status: 'succeeded',
    effects: ['x:try', 'y:try', 'x:confirm', 'y:confirm'],
  },
  {
    name: 'tcc-cancel',
    kind: 'tcc',
    input: { failAt: 'y', flakeAt: 'x:cancel' },
    status: 'failed',
    effects: ['x:try', 'x:cancel'],
  },
]

/** The retry policy every coordinator of these tests uses: three attempts, then parked. */
export const MATRIX_RETRY = { firstMs: 5, maxMs: 20, attempts: 3 } as const

/** Defines `matrix-saga` and `matrix-tcc` on `tc`; `close` closes the ledger handle. */
export function defineMatrix(
  tc: Coordinator,
  ledgerPath: string,
): { saga: Saga<MatrixInput>; tcc: Tcc<MatrixInput>; close: () => void } {
  const ledger = new Database(ledgerPath)
  ledger.pragma('busy_timeout = 5000')
  const apply = (step: string) => async (ctx: BranchContext<MatrixInput>) => {
    ledger.prepare('INSERT INTO invocations VALUES (?, ?, ?, ?)').run(ctx.gid, step, ctx.op, ctx.attempt)
    const key = `${step}:${ctx.op}`
    if ((ctx.op === 'action' || ctx.op === 'try') && ctx.input.failAt === step) throw new Error(`${step} refused`)
    if (ctx.input.stuckAt === key) throw new TxError(`${key} unavailable`, { retryable: true })
    if (ctx.input.flakeAt === key && ctx.attempt === 1) throw new TxError(`${key} flaked`, { retryable: true })
    await applyEffect(ledger, ctx.gid, step, ctx.op)
    return key
  }
  let saga = tc.saga<MatrixInput>('matrix-saga')
  for (const step of ['a', 'b', 'c']) saga = saga.step(step, { action: apply(step), compensate: apply(step) })
  const participant = (id: string) => ({ try: apply(id), confirm: apply(id), cancel: apply(id) })
  const tcc = tc.tcc<MatrixInput>('matrix-tcc', { x: participant('x'), y: participant('y') })
  return { saga, tcc, close: () => ledger.close() }
}

/** Invocations of `gid` in call order, as `step:op`. */
export function invocationOrder(ledgerPath: string, gid: string): string[] {
  const db = new Database(ledgerPath, { readonly: true })
  const rows = db.prepare('SELECT step, op FROM invocations WHERE gid = ? ORDER BY rowid').all(gid) as {
    step: string
    op: string
  }[]
  db.close()
  return rows.map((r) => `${r.step}:${r.op}`)
}
