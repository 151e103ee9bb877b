/**
 * XA two-phase commit across MariaDB and PostgreSQL, with the coordinator a child process that SIGKILLs itself
 * (`LATCHKEY_TX_CRASH_AT`) at each instant of the protocol: after the PREPARE of one branch, of both, after the
 * commit decision is logged, and between the two COMMITs. A fresh coordinator in this process (same log, same
 * resources) recovers: before the decision every branch is rolled back, after it every branch committed.
 * Checked each time: money conserved between the two databases, the outcome the log decided, and no prepared
 * transaction of ours left on either server (`XA RECOVER`, `pg_prepared_xacts`).
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Coordinator, createCoordinator } from '../src/index.js'
import { openTestDatabase, POSTGRES_URL, type TestDatabase, tempDir } from './support/databases.js'
import { eventually } from './support/eventually.js'
import { openXaBank, type XaBank } from './support/xa-bank.js'

const script = fileURLToPath(new URL('./support/xa-coordinator.ts', import.meta.url))

/** Runs the transfer in a coordinator process that kills itself at `crashAt`; resolves with what it printed. */
function runUntilKilled(storeUrl: string, table: string, gid: string, crashAt: string): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', script, storeUrl, table, gid, '10'], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, LATCHKEY_TX_CRASH_AT: crashAt },
  })
  let out = ''
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString()
  })
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    // 'close' (stdout read to its end), not 'exit', which can come before the last of what it printed is read.
    child.on('close', (code, signal) => {
      if (signal === 'SIGKILL') resolve(out)
      else
        reject(
          new Error(`the coordinator process exited with ${code ?? signal} instead of dying at ${crashAt}: ${out}`),
        )
    })
  })
}

const CASES = [
  ['after the PREPARE of one branch', 'xa:after-prepare b1', 'failed'],
  ['after the PREPARE of both branches', 'xa:after-prepare b2', 'failed'],
  ['after the commit decision is logged', 'after-log:status submitted', 'succeeded'],
  ['during COMMIT (the first branch committed, the second still prepared)', 'xa:after-commit b1', 'succeeded'],
  ['inside the first branch, before its PREPARE', 'xa:after-start b1', 'failed'],
] as const

// Every case on the SQLite log; the decisive two (both prepared, no decision / the decision logged) on PostgreSQL's.
describe.each([
  ['SQLite', CASES],
  ['PostgreSQL', CASES.filter((c) => c[1] === 'xa:after-prepare b2' || c[1] === 'after-log:status submitted')],
] as const)(
  'XA across MariaDB and PostgreSQL, %s log: the coordinator SIGKILLed at each step, then recovered',
  (log, cases) => {
    const run = `xa${randomBytes(3).toString('hex')}`
    const tmp = tempDir()
    let logDb: TestDatabase | undefined
    let storeUrl = `sqlite:${join(tmp.dir, 'tx.db')}`
    let bank: XaBank
    let tc: Coordinator
    let expected = { maria: 100, pg: 100 }

    beforeAll(async () => {
      if (log === 'PostgreSQL') {
        logDb = openTestDatabase('postgres')
        storeUrl = `${POSTGRES_URL}?tablePrefix=${logDb.prefix}`
      }
      bank = await openXaBank(100)
      tc = createCoordinator({
        store: storeUrl,
        recoverEveryMs: 100,
        retry: { firstMs: 5, maxMs: 20 },
        resources: { maria: bank.maria, pg: bank.pg },
      })
    })
    afterAll(async () => {
      await tc?.close()
      await bank?.drop()
      await logDb?.dropLocks(`latchkey-tx:tx:${run}`)
      await logDb?.drop()
      tmp.remove()
    })

    it.each(cases)('killed %s: recovery finishes it as the log says', async (_, crashAt, status) => {
      const gid = `${run}-${crashAt.replace(/[^a-z0-9]+/gi, '-')}`
      const out = await runUntilKilled(storeUrl, bank.table, gid, crashAt)
      expect(out).toContain(`latchkey-tx crash-point ${crashAt}`)
      const done = await eventually(async () => {
        const tx = await tc.get(gid)
        return tx?.status === status && tx
      }, 20_000)
      expect(done.kind).toBe('xa')
      expect(done.history.some((h) => h.type === 'recovered')).toBe(true)
      if (status === 'succeeded') expected = { maria: expected.maria - 10, pg: expected.pg + 10 }
      const balances = await bank.balances()
      expect(balances).toEqual(expected)
      expect(balances.maria + balances.pg).toBe(200)
      expect(await bank.prepared(run)).toEqual([])
    })

    it('a transfer after the crashes runs through (no lock left behind by a prepared branch)', async () => {
      const r = await tc.xa(
        'transfer',
        async (x) => {
          await x.branch('maria', (c: import('mysql2/promise').PoolConnection) =>
            c.query(`UPDATE ${bank.table} SET bal = bal - 1 WHERE id = 1`),
          )
          await x.branch('pg', (c: import('pg').PoolClient) =>
            c.query(`UPDATE ${bank.table} SET bal = bal + 1 WHERE id = 2`),
          )
        },
        { gid: `${run}-after` },
      )
      expect(r.status).toBe('succeeded')
      expect(await bank.balances()).toEqual({ maria: expected.maria - 1, pg: expected.pg + 1 })
      expect(await bank.prepared(run)).toEqual([])
    })
  },
)

describe('XA fencing: a coordinator paused after both PREPAREs (SIGSTOP) is overtaken', () => {
  const run = `xf${randomBytes(3).toString('hex')}`
  const tmp = tempDir()
  const storeUrl = `sqlite:${join(tmp.dir, 'tx.db')}`
  let bank: XaBank
  let tc: Coordinator

  beforeAll(async () => {
    bank = await openXaBank(100)
    // Retries outlast the pause: the paused process's MariaDB session still holds its prepared branch.
    tc = createCoordinator({
      store: storeUrl,
      recoverEveryMs: 100,
      retry: { firstMs: 20, maxMs: 100, attempts: 1_000 },
      resources: { maria: bank.maria, pg: bank.pg },
    })
  })
  afterAll(async () => {
    await tc?.close()
    await bank?.drop()
    tmp.remove()
  })

  it('recovery rolls back what it can reach; once resumed, the stale coordinator cannot log a decision, and its session lets go of its branch', async () => {
    const gid = `${run}-paused`
    const child = spawn(process.execPath, ['--import', 'tsx', script, storeUrl, bank.table, gid, '10'], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, LATCHKEY_TX_CRASH_AT: 'xa:after-prepare b2', LATCHKEY_TX_CRASH_SIGNAL: 'SIGSTOP' },
    })
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
    })
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
    try {
      await eventually(() => out.includes('crash-point xa:after-prepare b2'))
      // The recovering coordinator took the lease and decided to abort; PostgreSQL's branch (detached from its
      // session at PREPARE) is rolled back, MariaDB's stays attached to the paused session and is retried.
      await eventually(async () => {
        const tx = await tc.get(gid)
        return tx?.history.some((h) => h.type === 'xa-retry') && (await bank.prepared(gid)).join() === `maria:${gid}b1`
      }, 20_000)
      expect((await tc.get(gid))?.status).toBe('aborting')
      child.kill('SIGCONT')
      expect(await exited).toBe(0)
      // Its decision write was refused (StaleCoordinatorError): it reports the log's status, the recoverer's abort.
      expect(out).toMatch(/finished (aborting|failed)/)
      const done = await eventually(async () => {
        const tx = await tc.get(gid)
        return tx?.status === 'failed' && tx
      }, 20_000)
      expect(done.history.some((h) => h.type === 'submitted')).toBe(false)
      expect(await bank.balances()).toEqual({ maria: 100, pg: 100 })
      expect(await bank.prepared(gid)).toEqual([])
    } finally {
      child.kill('SIGKILL')
    }
  })
})
