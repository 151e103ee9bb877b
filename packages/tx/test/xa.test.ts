/**
 * tc.xa against real MariaDB and PostgreSQL, in one process: commit, rollback when the body or a branch fails,
 * the capability check on a PostgreSQL with two-phase commit off (a throwaway cluster), the phase-2 rule that a
 * branch already finished counts as done, the sweep of orphan branches, the deadline, and bad arguments.
 */
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import type mysql from 'mysql2/promise'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  type Coordinator,
  createCoordinator,
  TxAbortedError,
  TxTimeoutError,
  XaUnsupportedError,
} from '../src/index.js'
import { xaResourceOf } from '../src/xa/xa-resources.js'
import { mysqlXid, pgXid, XA_FORMAT_ID } from '../src/xa/xid.js'
import { tempDir } from './support/databases.js'
import { eventually } from './support/eventually.js'
import { startPostgresWithout2pc, type ThrowawayPostgres } from './support/pg-no-2pc.js'
import { openXaBank, transferBody, type XaBank } from './support/xa-bank.js'

type My = mysql.PoolConnection
type Pg = pg.PoolClient

describe('tc.xa on MariaDB + PostgreSQL', () => {
  const run = `xt${randomBytes(3).toString('hex')}`
  const tmp = tempDir()
  let bank: XaBank
  let tc: Coordinator
  let n = 0
  const gid = () => `${run}-${++n}`

  beforeAll(async () => {
    bank = await openXaBank(100)
    tc = createCoordinator({
      store: `sqlite:${join(tmp.dir, 'tx.db')}`,
      recover: false,
      retry: { firstMs: 5, maxMs: 20, attempts: 3 },
      resources: { maria: bank.maria, pg: bank.pg },
    })
  })
  afterAll(async () => {
    await tc?.close()
    await bank?.drop()
    tmp.remove()
  })

  it('commits both branches: the decision is logged after both PREPAREs and before the COMMITs', async () => {
    const before = await bank.balances()
    const r = await tc.xa('transfer', transferBody(bank.table, 7), { gid: gid() })
    expect(r.status).toBe('succeeded')
    expect(r.value).toBe('moved')
    expect(await bank.balances()).toEqual({ maria: before.maria - 7, pg: before.pg + 7 })
    const tx = await tc.get(r.gid)
    expect(tx?.history.map((h) => (h.branch === null ? h.type : `${h.type} ${h.branch}`))).toEqual([
      'created',
      'xa-branch b1',
      'xa-branch b2',
      'submitted',
      'succeeded',
    ])
    expect(tx?.history.find((h) => h.type === 'xa-branch')?.detail).toMatch(/^\{"resource":"mysql:/)
    expect(await bank.prepared(run)).toEqual([])
  })

  it('branches started together (Promise.all) each get their own connection and commit together', async () => {
    const before = await bank.balances()
    const r = await tc.xa(
      'transfer',
      async (x) => {
        const [a, b] = await Promise.all([
          x.branch(bank.maria, async (c) => {
            await c.query(`UPDATE ${bank.table} SET bal = bal - 2 WHERE id = 1`)
            return 'a'
          }),
          x.branch(bank.pg, async (c) => {
            await c.query(`UPDATE ${bank.table} SET bal = bal + 2 WHERE id = 2`)
            return 'b'
          }),
        ])
        return a + b
      },
      { gid: gid() },
    )
    expect(r).toMatchObject({ status: 'succeeded', value: 'ab' })
    expect(await bank.balances()).toEqual({ maria: before.maria - 2, pg: before.pg + 2 })
    expect(await bank.prepared(run)).toEqual([])
  })

  it('the body throws after both branches are prepared: both are rolled back', async () => {
    const before = await bank.balances()
    const r = await tc.xa(
      'transfer',
      async (x) => {
        await transferBody(bank.table, 5)(x)
        throw new Error('changed my mind')
      },
      { gid: gid() },
    )
    expect(r.status).toBe('failed')
    expect(r.error).toBeInstanceOf(TxAbortedError)
    expect(r.error?.message).toContain('changed my mind')
    expect(await bank.balances()).toEqual(before)
    expect(await bank.prepared(run)).toEqual([])
    expect((await tc.get(r.gid))?.history.map((h) => h.type)).toEqual([
      'created',
      'xa-branch',
      'xa-branch',
      'aborting',
      'failed',
    ])
  })

  it('a failing statement in the second branch rolls back the first, prepared one', async () => {
    const before = await bank.balances()
    const r = await tc.xa(
      'transfer',
      async (x) => {
        await x.branch('maria', (c: My) => c.query(`UPDATE ${bank.table} SET bal = bal - 3 WHERE id = 1`))
        await x.branch('pg', (c: Pg) => c.query(`UPDATE ${bank.table} SET no_such_column = 1`))
      },
      { gid: gid() },
    )
    expect(r.status).toBe('failed')
    expect((r.error as TxAbortedError).branch).toBe('b2')
    expect(await bank.balances()).toEqual(before)
    expect(await bank.prepared(run)).toEqual([])
  })

  it('a PostgreSQL branch whose error was caught inside it is not committed (PREPARE reported ROLLBACK)', async () => {
    const before = await bank.balances()
    const r = await tc.xa(
      'transfer',
      async (x) => {
        await x.branch('maria', (c: My) => c.query(`UPDATE ${bank.table} SET bal = bal - 3 WHERE id = 1`))
        await x.branch('pg', async (c: Pg) => {
          await c.query(`UPDATE ${bank.table} SET bal = bal + 3 WHERE id = 2`)
          await c.query('SELECT 1/0').catch(() => undefined)
        })
      },
      { gid: gid() },
    )
    expect(r.status).toBe('failed')
    expect(r.error?.message).toContain('PREPARE TRANSACTION rolled back')
    expect(await bank.balances()).toEqual(before)
    expect(await bank.prepared(run)).toEqual([])
  })

  it('a repeated COMMIT (or ROLLBACK) of a finished branch counts as done; one held by a live session does not', async () => {
    for (const [dialect, pool] of [
      ['mysql', bank.maria],
      ['postgres', bank.pg],
    ] as const) {
      const resource = xaResourceOf(pool)
      const xid = { gid: gid(), branch: 'b1' }
      const c = await resource.open()
      await c.start(xid)
      await c.prepare(xid)
      // Still attached to its session: MariaDB answers "unknown XID" to other sessions, yet lists it.
      if (dialect === 'mysql') expect(await resource.settle(xid, true)).toBe(false)
      c.release(true)
      await eventually(async () => (await resource.settle(xid, true)) === true)
      expect(await resource.settle(xid, true)).toBe(true)
      expect(await resource.settle(xid, false)).toBe(true)
      expect((await resource.recover()).filter((x) => x.gid === xid.gid)).toEqual([])
    }
  })

  it('the recovery sweep finishes an orphan branch as its finished transaction says, and leaves foreign ones', async () => {
    const failed = await tc.xa(
      'transfer',
      async () => {
        throw new Error('no branch')
      },
      { gid: gid() },
    )
    const committed = await tc.xa('transfer', async () => 'nothing', { gid: gid() })
    const foreign = gid()
    // Branches of those gids prepared behind the coordinator's back (as a fenced-out coordinator might have),
    // each inserting its own account row (rows of one table, so the three do not wait on each other's locks).
    const orphan = async (g: string, id: number) => {
      const c = await bank.maria.getConnection()
      await c.query(`XA START ${mysqlXid({ gid: g, branch: 'b9' })}`)
      await c.query(`INSERT INTO ${bank.table} VALUES (?, 1)`, [id])
      await c.query(`XA END ${mysqlXid({ gid: g, branch: 'b9' })}`)
      await c.query(`XA PREPARE ${mysqlXid({ gid: g, branch: 'b9' })}`)
      c.destroy()
    }
    await orphan(failed.gid, 101)
    await orphan(committed.gid, 102)
    await orphan(foreign, 103)
    await eventually(async () => (await bank.prepared(run)).length === 3)
    await tc.recoverNow()
    expect(await bank.prepared(run)).toEqual([`maria:${foreign}b9`])
    await bank.maria.query(`XA ROLLBACK ${mysqlXid({ gid: foreign, branch: 'b9' })}`)
    const [rows] = await bank.maria.query(`SELECT id FROM ${bank.table} WHERE id > 100`)
    expect(rows).toEqual([{ id: 102 }])
    await bank.maria.query(`DELETE FROM ${bank.table} WHERE id > 100`)
    expect(XA_FORMAT_ID).toBe(0x4c4b5458)
    expect(pgXid({ gid: 'g', branch: 'b1' })).toBe('lktx:g:b1')
  })

  it('a body that outlives timeoutMs is rolled back with TxTimeoutError', async () => {
    const short = createCoordinator({
      store: `sqlite:${join(tmp.dir, 'tx-timeout.db')}`,
      recover: false,
      timeoutMs: 50,
      resources: { maria: bank.maria },
    })
    try {
      const before = await bank.balances()
      const started = Date.now()
      const r = await short.xa(
        'slow',
        async (x) => {
          await x.branch('maria', (c: My) => c.query(`UPDATE ${bank.table} SET bal = bal - 1 WHERE id = 1`))
          await eventually(() => Date.now() > started + 120)
        },
        { gid: gid() },
      )
      expect(r.status).toBe('failed')
      expect(r.error).toBeInstanceOf(TxTimeoutError)
      expect(await bank.balances()).toEqual(before)
    } finally {
      await short.close()
    }
  })

  it('bad arguments are refused before any I/O', async () => {
    await expect(tc.xa('t', async () => 1, { gid: 'x'.repeat(65) })).rejects.toThrow(RangeError)
    await expect(tc.xa('bad name!', async () => 1)).rejects.toThrow(RangeError)
    await expect(tc.xa('t', 'nope' as never)).rejects.toThrow(TypeError)
    expect(() => createCoordinator({ store: 'sqlite::memory:', resources: { a: {} as never } })).toThrow(TypeError)
    const r = tc.xa('t', (x) => x.branch('nowhere', async () => 1), { gid: gid() })
    await expect(r).resolves.toMatchObject({ status: 'failed' })
    expect((await r).error?.message).toContain('no XA resource named "nowhere"')
  })
})

describe('the capability check', () => {
  let server: ThrowawayPostgres
  let bank: XaBank
  let noTwoPhase: pg.Pool
  const tmp = tempDir()

  beforeAll(async () => {
    server = await startPostgresWithout2pc()
    noTwoPhase = new pg.Pool({ connectionString: server.url, max: 2 })
    bank = await openXaBank(100)
  }, 60_000)
  afterAll(async () => {
    await noTwoPhase?.end()
    await bank?.drop()
    server?.stop()
    tmp.remove()
  })

  it('a PostgreSQL with max_prepared_transactions = 0 fails with XaUnsupportedError naming the setting; the other branch is rolled back', async () => {
    const tc = createCoordinator({
      store: `sqlite:${join(tmp.dir, 'tx.db')}`,
      recover: false,
      resources: { maria: bank.maria, off: noTwoPhase },
    })
    try {
      const gid = `cap${randomBytes(3).toString('hex')}`
      const attempt = tc.xa(
        'transfer',
        async (x) => {
          await x.branch('maria', (c: My) => c.query(`UPDATE ${bank.table} SET bal = bal - 1 WHERE id = 1`))
          await x.branch('off', (c: Pg) => c.query('SELECT 1'))
        },
        { gid },
      )
      const error = await attempt.then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(error).toBeInstanceOf(XaUnsupportedError)
      expect((error as XaUnsupportedError).setting).toBe('max_prepared_transactions')
      expect((error as XaUnsupportedError).message).toContain('max_prepared_transactions = 0')
      expect((error as XaUnsupportedError).resource).toMatch(/^postgres:127\.0\.0\.1:\d+\/postgres$/)
      expect(await bank.balances()).toEqual({ maria: 100, pg: 100 })
      expect(await bank.prepared(gid)).toEqual([])
      expect((await tc.get(gid))?.status).toBe('failed')
      // Nothing was logged for the refused branch: the check comes before its log entry and its XA START.
      expect((await tc.get(gid))?.history.filter((h) => h.type === 'xa-branch').length).toBe(1)
    } finally {
      await tc.close()
    }
  })
})
