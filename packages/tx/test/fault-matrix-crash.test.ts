/**
 * The fault-matrix rows about a coordinator that dies or stalls (rows 1-4 and 11 of the research note's
 * matrix), with real child processes: each SIGKILLs (or SIGSTOPs) itself at a named crash point, a fresh
 * coordinator recovers. The invariants every crash case checks are in `support/crash-matrix.ts`; these tests
 * add what each row asks for. The other rows are in `fault-matrix.test.ts`; the table is in the README.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { barrier } from '../src/barrier/index.js'
import { createCoordinator } from '../src/index.js'
import { type CrashCase, checkCrashCase, traceMatrix } from './support/crash-matrix.js'
import { createLedger, ledgerCounts } from './support/crash-saga.js'
import { eventually } from './support/eventually.js'
import { crashAtPoint, startMatrix } from './support/matrix-process.js'
import { defineMatrix, invocationOrder, MATRIX_RETRY } from './support/matrix-saga.js'

const matrix = await traceMatrix()
let n = 0
const fresh = () => {
  n += 1
  return {
    gid: `fm${n}`,
    storeUrl: `sqlite:${join(matrix.dir, `fm-${n}.db`)}`,
    ledgerPath: join(matrix.dir, `ledger-fm${n}.db`),
  }
}
const point = (title: string): CrashCase => {
  const c = matrix.cases.find((x) => x.title === title)
  if (c === undefined) throw new Error(`no traced crash point "${title}"`)
  return c
}

afterAll(() => {
  matrix.remove()
})

describe('fault matrix: the coordinator dies or stalls', () => {
  it('fault matrix row 1: coordinator dies in the TCC try phase (a try never sent): past the deadline, recovery cancels all; null compensation; the late try is refused', async () => {
    const { gid, storeUrl, ledgerPath } = fresh()
    await createLedger(ledgerPath)
    await crashAtPoint(
      { storeUrl, ledgerPath, scenario: 'tcc-confirm', gid, timeoutMs: 2_000 },
      'after-log:branch-running y/try#1',
    )
    const tc = createCoordinator({ store: storeUrl, recover: false, retry: MATRIX_RETRY })
    const { close } = defineMatrix(tc, ledgerPath)
    try {
      const deadline = (await tc.get(gid))?.deadlineAt ?? 0
      await eventually(() => Date.now() > deadline, 5_000)
      await tc.recoverNow()
      const done = await eventually(async () => {
        const tx = await tc.get(gid)
        return tx?.status === 'failed' && tx
      })
      expect(done.error).toMatch(/did not finish its forward phase/)
      // y's try never arrived: its cancel is a null compensation (called, no effect); x's try is undone once.
      expect(ledgerCounts(ledgerPath, gid)).toEqual({
        effects: { 'x:try': 1, 'x:cancel': 1 },
        calls: { 'x:try': 1, 'y:cancel': 1, 'x:cancel': 1 },
      })
      const ledger = new Database(ledgerPath)
      try {
        ledger.exec('BEGIN IMMEDIATE')
        const late = await barrier(ledger, { gid, branch: 'y', op: 'try' }, () => 'applied late')
        ledger.exec('COMMIT')
        expect(late.status).toBe('hanging')
      } finally {
        ledger.close()
      }
    } finally {
      await tc.close()
      close()
    }
  })

  it('fault matrix row 2: coordinator dies after the decision is durable, one confirm applied but not logged: recovery re-sends it, applied once, nothing cancelled', async () => {
    const { gid, storeUrl } = fresh()
    await checkCrashCase(point('tcc-confirm @ after-branch-call y/confirm#1'), storeUrl, matrix.dir, gid)
    expect(invocationOrder(join(matrix.dir, `ledger-${gid}.db`), gid).filter((k) => k.endsWith('cancel'))).toEqual([])
  })

  it('fault matrix row 3: coordinator dies between a saga step succeeding and the log recording it: the step is re-invoked, deduplicated, compensations still in reverse', async () => {
    const { gid, storeUrl } = fresh()
    await checkCrashCase(point('saga-compensation @ after-branch-call b/action#1'), storeUrl, matrix.dir, gid)
    const order = invocationOrder(join(matrix.dir, `ledger-${gid}.db`), gid)
    expect(order.filter((k) => k === 'b:action')).toHaveLength(2)
    expect([...new Set(order.filter((k) => k.endsWith('compensate')))]).toEqual([
      'c:compensate',
      'b:compensate',
      'a:compensate',
    ])
  })

  it('fault matrix row 4: coordinator dies during compensation: compensations resume, none applied twice, a logged one never called again', async () => {
    const { gid, storeUrl } = fresh()
    await checkCrashCase(point('saga-compensation @ after-branch-call b/compensate#2'), storeUrl, matrix.dir, gid)
    const order = invocationOrder(join(matrix.dir, `ledger-${gid}.db`), gid)
    expect(order.filter((k) => k === 'c:compensate')).toHaveLength(1)
    expect(order.filter((k) => k === 'a:compensate')).toHaveLength(1)
  })

  it.each([
    ['after the decision, before the first confirm is logged', 'after-log:status submitted'],
    ['after a confirm is logged as running, before it is sent', 'after-log:branch-running x/confirm#1'],
  ])(
    'fault matrix row 11: two coordinators think they own a TCC (SIGSTOP %s, past the lease; another finishes; SIGCONT): no double phase-2 call',
    async (_, key) => {
      const { gid, storeUrl, ledgerPath } = fresh()
      await createLedger(ledgerPath)
      const first = startMatrix({ storeUrl, ledgerPath, scenario: 'tcc-confirm', gid, leaseTtlMs: 600 }, key, 'SIGSTOP')
      expect(await first.reached).toBe(key)
      await eventually(() => readFileSync(`/proc/${first.child.pid}/stat`, 'utf8').split(' ')[2] === 'T')
      const second = createCoordinator({ store: storeUrl, recoverEveryMs: 50, retry: MATRIX_RETRY })
      const { close } = defineMatrix(second, ledgerPath)
      try {
        const done = await eventually(async () => {
          const tx = await second.get(gid)
          return tx?.status === 'succeeded' && tx
        })
        const before = ledgerCounts(ledgerPath, gid)
        first.child.kill('SIGCONT')
        const exit = await first.exited
        expect(exit.code).toBe(0)
        // The first one woke up and stopped: fenced out at its next log write, or, about to call a branch,
        // stopped by its lease's expiry (a call is not a write: no token can refuse it).
        expect(first.lines.at(-1)).toMatch(/^finished /)
        const after = ledgerCounts(ledgerPath, gid)
        expect(after).toEqual(before)
        expect(after.effects).toEqual({ 'x:try': 1, 'y:try': 1, 'x:confirm': 1, 'y:confirm': 1 })
        const recovered = done.history.find((e) => e.type === 'recovered')
        expect(recovered?.token).toBeGreaterThan(done.history[0]?.token ?? 0n)
      } finally {
        first.child.kill('SIGKILL')
        await second.close()
        close()
      }
    },
  )
})
