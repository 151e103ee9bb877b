/**
 * The saga and the TCC of the crash test, shared by the coordinator process that is killed and the one that finishes.
 * Every step applies its effect through the barrier in a SQLite "ledger" (a separate database, as a
 * participant's own would be), and counts its invocations outside the barrier, so that a test can tell
 * "called twice" from "applied twice".
 */
import Database from 'better-sqlite3'
import { barrier, ensureBarrierTable } from '../../src/barrier/index.js'
import type { BranchContext, BranchOp, Coordinator, Saga, Tcc } from '../../src/index.js'

export const CRASH_SAGA = 'crash-saga'
export const CRASH_TCC = 'crash-tcc'
export const STEPS = ['a', 'b', 'c'] as const

/** Creates the ledger tables. */
export async function createLedger(path: string): Promise<void> {
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  db.exec('CREATE TABLE IF NOT EXISTS effects (gid TEXT, step TEXT, op TEXT)')
  db.exec('CREATE TABLE IF NOT EXISTS invocations (gid TEXT, step TEXT, op TEXT, attempt INTEGER)')
  await ensureBarrierTable(db)
  db.close()
}

/** Tells the parent where we are, then never returns: the parent kills this process here. */
async function crashPoint(): Promise<never> {
  process.stdout.write('crash-point\n')
  return new Promise<never>(() => undefined)
}

/** Applies the effect of `step:op` once, through the barrier, in its own ledger transaction. */
export async function applyEffect(ledger: Database.Database, gid: string, step: string, op: BranchOp): Promise<void> {
  ledger.exec('BEGIN IMMEDIATE')
  try {
    await barrier(ledger, { gid, branch: step, op }, (db) =>
      db.prepare('INSERT INTO effects VALUES (?, ?, ?)').run(gid, step, op),
    )
    ledger.exec('COMMIT')
  } catch (error) {
    ledger.exec('ROLLBACK')
    throw error
  }
}

/** Counts per `step:op` in the ledger. */
export function ledgerCounts(
  path: string,
  gid: string,
): { effects: Record<string, number>; calls: Record<string, number> } {
  const db = new Database(path, { readonly: true })
  const count = (table: string) =>
    Object.fromEntries(
      (
        db
          .prepare(`SELECT step || ':' || op AS k, COUNT(*) AS n FROM ${table} WHERE gid = ? GROUP BY step, op`)
          .all(gid) as { k: string; n: number }[]
      ).map((r) => [r.k, r.n]),
    )
  const result = { effects: count('effects'), calls: count('invocations') }
  db.close()
  return result
}

/**
 * Defines the saga (steps a, b, c) and the TCC (participants x, y) on `tc`. `crashAt` (`step:op`) makes that
 * operation print `crash-point` once its effect is committed and then never return: the parent kills the
 * process there; `step:op:before` does it before the effect (the log already says the operation is running). The forward operation of the step named by `input.failAt` fails.
 */
export function defineCrashSaga(
  tc: Coordinator,
  ledgerPath: string,
  crashAt?: string,
): { saga: Saga<{ failAt?: string }>; tcc: Tcc<{ failAt?: string }>; close: () => void } {
  const ledger = new Database(ledgerPath)
  ledger.pragma('busy_timeout = 5000')
  const apply = (step: string) => async (ctx: BranchContext<{ failAt?: string }>) => {
    ledger.prepare('INSERT INTO invocations VALUES (?, ?, ?, ?)').run(ctx.gid, step, ctx.op, ctx.attempt)
    if ((ctx.op === 'action' || ctx.op === 'try') && ctx.input.failAt === step) throw new Error(`${step} refused`)
    if (crashAt === `${step}:${ctx.op}:before`) await crashPoint()
    await applyEffect(ledger, ctx.gid, step, ctx.op)
    if (crashAt === `${step}:${ctx.op}`) await crashPoint()
    return `${step}-${ctx.op}`
  }
  let saga = tc.saga<{ failAt?: string }>(CRASH_SAGA)
  for (const step of STEPS) saga = saga.step(step, { action: apply(step), compensate: apply(step) })
  const participant = (id: string) => ({ try: apply(id), confirm: apply(id), cancel: apply(id) })
  const tcc = tc.tcc<{ failAt?: string }>(CRASH_TCC, { x: participant('x'), y: participant('y') })
  return { saga, tcc, close: () => ledger.close() }
}
