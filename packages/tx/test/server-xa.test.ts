/**
 * DTM's XA over HTTP through `latchkey-tx serve`, as DTM's SDKs drive it: `prepare` (trans_type xa); each branch's
 * resource manager runs `BEGIN … PREPARE TRANSACTION` on its own database and registers its phase-2 URL
 * (`registerBranch` with `url`); then `submit` makes the service call every URL with `op=commit`, and `abort` or
 * `timeout_to_fail` with `op=rollback`. The resource manager here is real: PostgreSQL prepared transactions on an
 * accounts table, committed or rolled back by the phase-2 call, checked in `pg_prepared_xacts` afterwards.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { POSTGRES_URL, uniquePrefix } from './support/databases.js'
import { eventually } from './support/eventually.js'
import { uniqueGid, useServerFixture } from './support/server-fixture.js'
import { dtm } from './support/server-process.js'

describe('latchkey-tx serve: DTM XA over raw HTTP, with PostgreSQL prepared transactions', () => {
  const f = useServerFixture(['--retry-first-ms', '10', '--retry-max-ms', '50'])
  const table = `${uniquePrefix('xahttp')}acct`
  let pool: pg.Pool

  /** The XA transaction id of a branch, as DTM's SDK forms it: `<gid>-<branch_id>`. */
  const xid = (gid: string, branchId: string) => `${gid}-${branchId}`

  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 4 })
    await pool.query(`CREATE TABLE ${table} (id text PRIMARY KEY, bal int NOT NULL)`)
    // The phase-2 endpoint of the resource manager, as DTM's XaHandlePhase2: COMMIT or ROLLBACK PREPARED.
    const phase2 = async (c: { gid: string | null; branchId: string | null; op: string | null }) => {
      const verb = c.op === 'commit' ? 'COMMIT' : 'ROLLBACK'
      await pool.query(`${verb} PREPARED '${xid(c.gid ?? '', c.branchId ?? '')}'`).catch((error: { code?: string }) => {
        // Done already (a repeated phase-2 call): PostgreSQL no longer knows the prepared transaction.
        if (error.code !== '42704') throw error
      })
    }
    f.participant.effect('/api/busi/XaPhase2', phase2)
  })
  afterAll(async () => {
    const left = await pool.query(`SELECT gid FROM pg_prepared_xacts WHERE gid LIKE 'TestXa%'`)
    for (const r of left.rows as { gid: string }[]) await pool.query(`ROLLBACK PREPARED '${r.gid}'`)
    await pool.query(`DROP TABLE IF EXISTS ${table}`)
    await pool.end()
  })

  /** A branch as DTM's XaLocalTransaction runs it: the business SQL prepared under the XID, then registered. */
  async function branch(gid: string, branchId: string, account: string, delta: number): Promise<number> {
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      await client.query(
        `INSERT INTO ${table} VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET bal = ${table}.bal + $2`,
        [account, delta],
      )
      await client.query(`PREPARE TRANSACTION '${xid(gid, branchId)}'`)
    } finally {
      client.release()
    }
    const reg = { gid, trans_type: 'xa', branch_id: branchId, url: `${f.busi}/XaPhase2` }
    return (await dtm(f.server.base, 'registerBranch', reg)).status
  }

  const balances = async (gid: string) =>
    (await pool.query(`SELECT id, bal FROM ${table} WHERE id LIKE $1 ORDER BY id`, [`${gid}%`])).rows
  const prepared = async (gid: string) =>
    (await pool.query('SELECT gid FROM pg_prepared_xacts WHERE gid LIKE $1', [`${gid}%`])).rows
  const statusOf = async (gid: string) =>
    ((await dtm(f.server.base, `query?gid=${gid}`)).body.transaction as { status: string }).status

  it('prepare, two prepared branches, submit: every branch is committed with op=commit; money moved, nothing left prepared', async () => {
    const gid = uniqueGid('TestXaNormal')
    expect((await dtm(f.server.base, 'prepare', { gid, trans_type: 'xa' })).status).toBe(200)
    expect(await branch(gid, '01', `${gid}-A`, -30)).toBe(200)
    expect(await branch(gid, '02', `${gid}-B`, 30)).toBe(200)
    // Prepared, not visible yet.
    expect(await balances(gid)).toEqual([])
    expect(await dtm(f.server.base, 'submit', { gid, trans_type: 'xa', wait_result: true })).toEqual({
      status: 200,
      body: { dtm_result: 'SUCCESS' },
    })
    const calls = f.participant.callsTo('/api/busi/XaPhase2', gid)
    expect(calls.map((c) => `${c.transType} ${c.branchId} ${c.op}`).sort()).toEqual(['xa 01 commit', 'xa 02 commit'])
    expect(await balances(gid)).toEqual([
      { id: `${gid}-A`, bal: -30 },
      { id: `${gid}-B`, bal: 30 },
    ])
    expect(await prepared(gid)).toEqual([])
    const q = await dtm(f.server.base, `query?gid=${gid}`)
    expect(q.body.transaction).toMatchObject({ trans_type: 'xa', status: 'succeed' })
    const ops = (q.body.branches as { op: string; branch_id: string }[]).map((b) => `${b.branch_id} ${b.op}`)
    expect(ops).toEqual(['01 rollback', '01 commit', '02 rollback', '02 commit'])
  })

  it('abort after one branch prepared: rolled back with op=rollback, no money moved, nothing left prepared', async () => {
    const gid = uniqueGid('TestXaAbort')
    await dtm(f.server.base, 'prepare', { gid, trans_type: 'xa' })
    expect(await branch(gid, '01', `${gid}-A`, -30)).toBe(200)
    expect((await dtm(f.server.base, 'abort', { gid, trans_type: 'xa', wait_result: true })).status).toBe(409)
    expect(await statusOf(gid)).toBe('failed')
    expect(f.participant.callsTo('/api/busi/XaPhase2', gid).map((c) => c.op)).toEqual(['rollback'])
    expect(await balances(gid)).toEqual([])
    expect(await prepared(gid)).toEqual([])
    // Decided: a late submit is refused.
    expect((await dtm(f.server.base, 'submit', { gid, trans_type: 'xa' })).status).toBe(409)
  })

  it('no submit within timeout_to_fail (the application died): the service rolls every prepared branch back', async () => {
    const gid = uniqueGid('TestXaTimeout')
    await dtm(f.server.base, 'prepare', { gid, trans_type: 'xa', timeout_to_fail: 1 })
    expect(await branch(gid, '01', `${gid}-A`, -30)).toBe(200)
    await eventually(async () => (await statusOf(gid)) === 'failed', 10_000)
    expect(await prepared(gid)).toEqual([])
    expect(await balances(gid)).toEqual([])
  })

  it('refuses an xa registration without url, and a tcc registration on an xa transaction', async () => {
    const gid = uniqueGid('TestXaBadRegistration')
    await dtm(f.server.base, 'prepare', { gid, trans_type: 'xa' })
    const noUrl = await dtm(f.server.base, 'registerBranch', { gid, trans_type: 'xa', branch_id: '01' })
    expect(noUrl.status).toBe(400)
    expect(String(noUrl.body.message)).toMatch(/url/)
    const asTcc = await dtm(f.server.base, 'registerBranch', { gid, trans_type: 'tcc', branch_id: '01' })
    expect(asTcc.status).toBe(404)
    await dtm(f.server.base, 'abort', { gid, trans_type: 'xa' })
  })
})
