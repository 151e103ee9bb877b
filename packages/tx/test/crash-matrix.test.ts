/**
 * Crash at every step, on the SQLite log: for each scenario (saga forward, saga compensation, a saga that
 * parks, TCC try + confirm, TCC try + cancel), the coordinator process is SIGKILLed at a crash point it
 * passes (after each log write, after each branch call), then a restarted coordinator recovers the
 * transaction. The cases come from a trace of the code's crash points, so a new point is covered without
 * editing this file. Each case has its own log file: SQLite has one writer per file, and several processes
 * contending for one would turn this into a test of busy timeouts.
 *
 * The default run takes the SMOKE rows (every crash-point label, every scenario, every phase); the full run
 * (`npm run test:full`) takes all of the 85 traced points.
 */
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { CRASH_POINT_LABELS } from '../src/coordinator/crash-point.js'
import { checkCrashCase, traceMatrix } from './support/crash-matrix.js'
import { smokeOrFull } from './support/full-run.js'

/**
 * One row per kind of situation a crash can leave the log in; together they reach every label and scenario.
 * The points between two of these are the same situations at another branch or attempt.
 */
const SMOKE = [
  // The create is written with the first branch's running mark: the first action is cut short by it.
  'saga-forward @ after-log:created',
  // A retry was logged; the recovering coordinator makes the next attempt.
  'saga-forward @ after-log:branch-retry b/action#1',
  // A forward effect committed (on its second attempt) but not logged: called again, applied once.
  'saga-forward @ after-branch-call b/action#2',
  // Finished: recovery must not touch it.
  'saga-forward @ after-log:status succeeded',
  // The abort decision logged, no compensation run yet.
  'saga-compensation @ after-log:status aborting',
  // A compensation committed but not logged (after a retried attempt): never applied twice.
  'saga-compensation @ after-branch-call b/compensate#2',
  // A compensation's success carried by the next running mark: that next compensation is cut short.
  'saga-compensation @ after-log:branch-succeeded b/compensate#2',
  // The last attempt before parking is running: recovery parks it with its reason.
  'saga-parked @ after-log:branch-running b/action#3',
  'saga-parked @ after-log:parked b/action#3',
  // A try committed but not logged.
  'tcc-confirm @ after-branch-call x/try#1',
  // The TCC commit decision, then a confirm running on its second attempt.
  'tcc-confirm @ after-log:status submitted',
  'tcc-confirm @ after-log:branch-running x/confirm#2',
  // A cancel running after the abort decision.
  'tcc-cancel @ after-log:branch-running y/cancel#1',
]

const matrix = await traceMatrix()
const cases = smokeOrFull(
  matrix.cases.map((c, i) => ({ ...c, i })),
  (c) => SMOKE.includes(c.title),
)

describe('crash at every step (SQLite log)', () => {
  afterAll(() => {
    matrix.remove()
  })

  it('the scenarios pass every crash point the coordinator has', () => {
    const reached = new Set(matrix.cases.map((c) => c.key.split(' ')[0]))
    expect(CRASH_POINT_LABELS.filter((label) => !reached.has(label))).toEqual([])
    expect(matrix.cases.length).toBeGreaterThan(60)
  })

  it('the smoke rows are traced points and reach every label and every scenario', () => {
    const smoke = matrix.cases.filter((c) => SMOKE.includes(c.title))
    expect(SMOKE.filter((t) => !smoke.some((c) => c.title === t))).toEqual([])
    const labels = new Set(smoke.map((c) => c.key.split(' ')[0]))
    expect(CRASH_POINT_LABELS.filter((label) => !labels.has(label))).toEqual([])
    const scenarios = new Set(smoke.map((c) => c.scenario.name))
    expect([...new Set(matrix.cases.map((c) => c.scenario.name))].filter((s) => !scenarios.has(s))).toEqual([])
  })

  it.concurrent.each(cases)('SIGKILL: $title', async (c) => {
    await checkCrashCase(c, `sqlite:${join(matrix.dir, `tx-${c.i}.db`)}`, matrix.dir, `m${c.i}`)
  })
})
