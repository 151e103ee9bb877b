/**
 * The crash test on the PostgreSQL and MariaDB logs, with their default leases (latchkey's table backends on
 * the same database): a coordinator process killed with SIGKILL mid-saga, a fresh coordinator finishing it.
 */
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Coordinator, createCoordinator } from '../src/index.js'
import { kill, runUntilCrashPoint } from './support/crash-process.js'
import { createLedger, defineCrashSaga, ledgerCounts } from './support/crash-saga.js'
import { MYSQL_URL, openTestDatabase, POSTGRES_URL, type TestDatabase, tempDir } from './support/databases.js'
import { eventually } from './support/eventually.js'

describe.each(['postgres', 'mysql'] as const)('recovery after SIGKILL on the %s log', (dialect) => {
  const run = `c${randomBytes(4).toString('hex')}`
  const tmp = tempDir()
  const ledgerPath = join(tmp.dir, 'ledger.db')
  let db: TestDatabase
  let storeUrl: string
  let tc: Coordinator
  let closeLedger: () => void

  beforeAll(async () => {
    db = openTestDatabase(dialect)
    storeUrl = `${dialect === 'postgres' ? POSTGRES_URL : MYSQL_URL}?tablePrefix=${db.prefix}`
    await createLedger(ledgerPath)
    tc = createCoordinator({ store: storeUrl, recoverEveryMs: 100, retry: { firstMs: 5, maxMs: 20 } })
    closeLedger = defineCrashSaga(tc, ledgerPath).close
  })
  afterAll(async () => {
    await tc?.close()
    closeLedger?.()
    await db?.dropLocks(`latchkey-tx:tx:${run}`)
    await db?.drop()
    tmp.remove()
  })

  it.each([
    ['after a step committed its effect', 'b:action', '-', 'succeeded', 'b:action'],
    ['during compensation', 'b:compensate', 'c', 'failed', 'b:compensate'],
  ])('killed %s: finished by a fresh coordinator, every effect once', async (_, crashAt, failAt, status, twice) => {
    const gid = `${run}-${crashAt.replace(':', '-')}`
    await kill(await runUntilCrashPoint({ storeUrl, ledgerPath, crashAt, gid, failAt }))
    const done = await eventually(async () => {
      const tx = await tc.get(gid)
      return tx?.status === status && tx
    }, 20_000)
    const { effects, calls } = ledgerCounts(ledgerPath, gid)
    const undone = status === 'failed' ? { 'a:compensate': 1, 'b:compensate': 1 } : { 'c:action': 1 }
    expect(effects).toEqual({ 'a:action': 1, 'b:action': 1, ...undone })
    expect(calls[twice]).toBe(2)
    expect(Object.entries(calls).filter(([k, v]) => k !== twice && v !== 1)).toEqual([])
    const recovered = done.history.find((e) => e.type === 'recovered')
    expect(recovered?.token).toBeGreaterThan(done.history[0]?.token ?? 0n)
  })
})
