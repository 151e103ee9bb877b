/**
 * `latchkey-tx serve` killed with SIGKILL mid-transaction and restarted on the same store (PostgreSQL and
 * MariaDB): what it accepted was in the log before it answered, and the new process finishes the transaction.
 */
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_BARRIER_TABLE } from '../src/barrier/barrier-sql.js'
import { barrier, ensureBarrierTable } from '../src/barrier/index.js'
import { runLocalTransaction } from '../src/msg/local-transaction.js'
import { queryPrepared } from '../src/msg/query-prepared.js'
import {
  type Dialect,
  MYSQL_URL,
  openTestDatabase,
  POSTGRES_URL,
  type TestDatabase,
  tempDir,
} from './support/databases.js'
import { type Participant, type ParticipantCall, startParticipant } from './support/dtm-participant.js'
import { eventually } from './support/eventually.js'
import { dtm, type ServerProcess, startServer } from './support/server-process.js'

// A short lease so that the restarted server takes over the killed one's transactions within a second.
const FAST = ['--lease-ttl-ms', '1000', '--recover-every-ms', '100', '--retry-first-ms', '10', '--retry-max-ms', '50']

describe.each(['postgres', 'mysql'] as Dialect[])('latchkey-tx serve killed with SIGKILL on %s', (dialect) => {
  const run = `crash${randomBytes(3).toString('hex')}`
  let db: TestDatabase
  let participant: Participant
  let storeUrl: string
  const servers: ServerProcess[] = []
  const start = async () => {
    const s = await startServer(storeUrl, FAST)
    servers.push(s)
    return s
  }

  beforeAll(async () => {
    db = openTestDatabase(dialect)
    participant = await startParticipant()
    storeUrl = `${dialect === 'postgres' ? POSTGRES_URL : MYSQL_URL}?tablePrefix=${db.prefix}`
  })
  afterAll(async () => {
    for (const s of servers) if (s.child.exitCode === null && s.child.signalCode === null) await s.kill()
    await participant?.close()
    await db?.dropLocks(`latchkey-tx:tx:${run}`)
    await db?.drop()
  })

  it('mid-saga (a participant blocks until the kill): the restarted server finishes it, each step applied once', async () => {
    const gid = `${run}-saga`
    const busi = `${participant.base}/api/busi`
    // The bank: a participant as DTM's examples write one, its effects inside DTM's barrier keyed by the query
    // parameters. TransIn commits its effect, then blocks its answer until the coordinator is killed.
    const tmp = tempDir()
    const ledger = new Database(join(tmp.dir, 'bank.db'))
    await ensureBarrierTable(ledger)
    ledger.exec("CREATE TABLE acct (id TEXT PRIMARY KEY, bal INTEGER); INSERT INTO acct VALUES ('A', 100), ('B', 0)")
    const transfer = (id: string, sign: number) => async (c: ParticipantCall) => {
      const amount = (JSON.parse(c.body) as { amount: number }).amount
      ledger.exec('BEGIN IMMEDIATE')
      try {
        await barrier(ledger, { gid: String(c.gid), branch: String(c.branchId), op: String(c.op) }, (db) =>
          db.prepare('UPDATE acct SET bal = bal + ? WHERE id = ?').run(sign * amount, id),
        )
        ledger.exec('COMMIT')
      } catch (error) {
        ledger.exec('ROLLBACK')
        throw error
      }
    }
    participant.effect('/api/busi/TransOut', transfer('A', -1))
    participant.effect('/api/busi/TransIn', transfer('B', 1))
    participant.answer('/api/busi/TransIn', 'hang')
    const first = await start()
    const body = {
      gid,
      trans_type: 'saga',
      steps: [
        { action: `${busi}/TransOut`, compensate: `${busi}/TransOutRevert` },
        { action: `${busi}/TransIn`, compensate: `${busi}/TransInRevert` },
      ],
      payloads: ['{"amount":30}', '{"amount":30}'],
    }
    expect((await dtm(first.base, 'submit', body)).status).toBe(200)
    await eventually(() => participant.callsTo('/api/busi/TransIn', gid).length === 1)
    await first.kill()
    participant.answer('/api/busi/TransIn', { status: 200 })

    const second = await start()
    await eventually(async () => {
      const q = await dtm(second.base, `query?gid=${gid}`)
      return (q.body.transaction as { status: string }).status === 'succeed'
    }, 15_000)
    // TransOut had answered before the kill: not called again. TransIn's first call never got an answer, so
    // it is called once more (with the same gid/branch_id/op: DTM's barrier makes the repeat a no-op).
    expect(participant.callsTo('/api/busi/TransOut', gid)).toHaveLength(1)
    const into = participant.callsTo('/api/busi/TransIn', gid)
    expect(into.map((c) => `${c.branchId} ${c.op}`)).toEqual(['02 action', '02 action'])
    expect(participant.calls.filter((c) => c.gid === gid && c.op === 'compensate')).toEqual([])
    const balances = ledger.prepare('SELECT id, bal FROM acct ORDER BY id').all()
    expect(balances).toEqual([
      { id: 'A', bal: 70 },
      { id: 'B', bal: 30 },
    ])
    await second.stop()
    ledger.close()
    tmp.remove()
  })

  // Every store runs the restart above; these exercise the service rather than the store: PostgreSQL only.
  if (dialect === 'postgres') {
    it('a second server already running takes over a saga whose shape it never saw when the first is killed', async () => {
      const gid = `${run}-peer`
      const busi = `${participant.base}/api/busi`
      participant.answer('/api/busi/Hold', 'hang')
      const first = await start()
      const peer = await start()
      const step = (name: string) => ({ action: `${busi}/${name}`, compensate: `${busi}/${name}Revert` })
      const body = {
        gid,
        trans_type: 'saga',
        steps: [step('One'), step('Two'), step('Hold')],
        payloads: ['{}', '{}', '{}'],
      }
      expect((await dtm(first.base, 'submit', body)).status).toBe(200)
      await eventually(() => participant.callsTo('/api/busi/Hold', gid).length === 1)
      await first.kill()
      participant.answer('/api/busi/Hold', { status: 200 })
      await eventually(async () => {
        const q = await dtm(peer.base, `query?gid=${gid}`)
        return (q.body.transaction as { status: string }).status === 'succeed'
      }, 15_000)
      expect(participant.callsTo('/api/busi/One', gid)).toHaveLength(1)
      expect(participant.callsTo('/api/busi/Two', gid)).toHaveLength(1)
      expect(participant.callsTo('/api/busi/Hold', gid)).toHaveLength(2)
      await peer.stop()
    })

    it('a prepared TCC with a registered branch survives the kill: submit to the new server confirms it', async () => {
      const gid = `${run}-tcc`
      const busi = `${participant.base}/api/busi`
      const first = await start()
      expect((await dtm(first.base, 'prepare', { gid, trans_type: 'tcc' })).status).toBe(200)
      const reg = { gid, trans_type: 'tcc', branch_id: '01', data: '{"amount":7}' }
      const branch = { ...reg, confirm: `${busi}/TccConfirm`, cancel: `${busi}/TccCancel` }
      expect((await dtm(first.base, 'registerBranch', branch)).status).toBe(200)
      await first.kill()

      const second = await start()
      expect(await dtm(second.base, 'submit', { gid, trans_type: 'tcc', wait_result: true })).toEqual({
        status: 200,
        body: { dtm_result: 'SUCCESS' },
      })
      expect(participant.callsTo('/api/busi/TccConfirm', gid).map((c) => `${c.branchId} ${c.op} ${c.body}`)).toEqual([
        '01 confirm {"amount":7}',
      ])
      expect(participant.callsTo('/api/busi/TccCancel', gid)).toEqual([])
      await second.stop()
    })

    it('a prepared message survives the kill of the server and of its producer: the new server checks back and delivers only the committed one', async () => {
      const busi = `${participant.base}/api/busi`
      // The producer's database, as a DTM producer keeps it: its local transaction writes the message's barrier
      // row; its QueryPrepared endpoint answers from that row (200 committed, 409 rolled back).
      const tmp = tempDir()
      const producer = new Database(join(tmp.dir, 'producer.db'))
      participant.effect('/api/busi/MsgQuery', async (c) => {
        const outcome = await queryPrepared(producer, c.gid ?? '')
        participant.answer('/api/busi/MsgQuery', { status: outcome === 'committed' ? 200 : 409 })
      })
      const body = (gid: string) => ({
        gid,
        trans_type: 'msg',
        steps: [{ action: `${busi}/MsgDeliver` }],
        payloads: ['{"order":1}'],
        query_prepared: `${busi}/MsgQuery`,
        timeout_to_fail: 1,
      })
      const committed = `${run}-msg-committed`
      const lost = `${run}-msg-lost`
      const first = await start()
      for (const gid of [committed, lost]) expect((await dtm(first.base, 'prepare', body(gid))).status).toBe(200)
      // One producer commits its local transaction and dies before the submit; the other dies before committing.
      await runLocalTransaction(
        producer,
        committed,
        DEFAULT_BARRIER_TABLE,
        () => 'order written',
        () => undefined,
      )
      await first.kill()

      const second = await start()
      const statusOf = async (gid: string) =>
        ((await dtm(second.base, `query?gid=${gid}`)).body.transaction as { status: string }).status
      await eventually(
        async () => (await statusOf(committed)) === 'succeed' && (await statusOf(lost)) === 'failed',
        15_000,
      )
      expect(participant.callsTo('/api/busi/MsgDeliver', committed).map((c) => `${c.op} ${c.body}`)).toEqual([
        'action {"order":1}',
      ])
      expect(participant.callsTo('/api/busi/MsgDeliver', lost)).toEqual([])
      // The rolled-back verdict is final: the late producer's local transaction is refused by its barrier row.
      await expect(
        runLocalTransaction(
          producer,
          lost,
          DEFAULT_BARRIER_TABLE,
          () => 'too late',
          () => undefined,
        ),
      ).rejects.toThrow(/already settled it as rolled back/)
      await second.stop()
      producer.close()
      tmp.remove()
    })
  }
})
