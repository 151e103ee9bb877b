/**
 * Crash at every step on the PostgreSQL and MariaDB logs (with their default leases, latchkey's table backends
 * on the same database). The normal run takes one representative point per phase; the full run
 * (`npm run test:full`, or `scripts/crash-matrix.sh` for the two crash-matrix files alone) takes every traced point.
 */
import { randomBytes } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { checkCrashCase, traceMatrix } from './support/crash-matrix.js'
import { MYSQL_URL, openTestDatabase, POSTGRES_URL, uniquePrefix } from './support/databases.js'
import { smokeOrFull } from './support/full-run.js'

/** One point per phase: an effect committed but not logged, the abort decision, a compensation, the TCC decision, a cancel. */
const REPRESENTATIVE = [
  'saga-forward @ after-branch-call b/action#2',
  'saga-compensation @ after-log:status aborting',
  'saga-compensation @ after-branch-call b/compensate#2',
  'tcc-confirm @ after-log:status submitted',
  'tcc-cancel @ after-log:branch-running y/cancel#1',
]
const matrix = await traceMatrix()
const cases = smokeOrFull(
  matrix.cases.map((c, i) => ({ ...c, i })),
  (c) => REPRESENTATIVE.includes(c.title),
)

describe.each(['postgres', 'mysql'] as const)('crash at every step (%s log)', (dialect) => {
  const run = `c${randomBytes(4).toString('hex')}`
  afterAll(async () => {
    const db = openTestDatabase(dialect)
    await db.dropLocks(`latchkey-tx:tx:${run}`)
    await db.drop()
  })

  it('the representative points are still among the traced ones', () => {
    expect(REPRESENTATIVE.filter((t) => !matrix.cases.some((c) => c.title === t))).toEqual([])
  })

  it.concurrent.each(cases)('SIGKILL: $title', async (c) => {
    // Its own tables: a recovering coordinator must not pick up another case's transaction mid-crash.
    const db = openTestDatabase(dialect, uniquePrefix('lcm'))
    try {
      const url = `${dialect === 'postgres' ? POSTGRES_URL : MYSQL_URL}?tablePrefix=${db.prefix}`
      await checkCrashCase(c, url, matrix.dir, `${run}-${c.i}`, 2_000)
    } finally {
      await db.drop()
    }
  })
})

afterAll(() => {
  matrix.remove()
})
