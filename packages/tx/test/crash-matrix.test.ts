/**
 * Crash at every step, on the SQLite log: for each scenario (saga forward, saga compensation, a saga that
 * parks, TCC try + confirm, TCC try + cancel), the coordinator process is SIGKILLed at every crash point it
 * passes (after each log write, after each branch call), then a restarted coordinator recovers the
 * transaction. The cases come from a trace of the code's crash points, so a new point is covered without
 * editing this file. Each case has its own log file: SQLite has one writer per file, and several processes
 * contending for one would turn this into a test of busy timeouts.
 */
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { CRASH_POINT_LABELS } from '../src/coordinator/crash-point.js'
import { checkCrashCase, traceMatrix } from './support/crash-matrix.js'

const matrix = await traceMatrix()

describe('crash at every step (SQLite log)', () => {
  afterAll(() => {
    matrix.remove()
  })

  it('the scenarios pass every crash point the coordinator has', () => {
    const reached = new Set(matrix.cases.map((c) => c.key.split(' ')[0]))
    expect(CRASH_POINT_LABELS.filter((label) => !reached.has(label))).toEqual([])
    expect(matrix.cases.length).toBeGreaterThan(60)
  })

  it.concurrent.each(matrix.cases.map((c, i) => ({ ...c, i })))('SIGKILL: $title', async (c) => {
    await checkCrashCase(c, `sqlite:${join(matrix.dir, `tx-${c.i}.db`)}`, matrix.dir, `m${c.i}`)
  })
})
