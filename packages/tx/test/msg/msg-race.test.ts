/**
 * The check-back overlapping a slow local transaction: the producer (a child process) opens its local
 * transaction, writes the order and its barrier row, and is then stopped (SIGSTOP) with the transaction still
 * open. Its lease runs out, the coordinator in this process takes the message over and checks back: its
 * insert of the rollback row waits on the producer's uncommitted row (seen waiting on a lock in the database).
 * Then the producer resumes (SIGCONT) and commits, or rolls back: the waiting check-back answers accordingly
 * and only once (one check-back attempt, never "unknown, ask again"); the producer's own late submit is fenced.
 * PostgreSQL and MariaDB here; SQLite in `msg-race-sqlite.test.ts` (its check-back runs in a process of its own:
 * better-sqlite3 waits for a lock synchronously).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Coordinator, createCoordinator, queryPrepared } from '../../src/index.js'
import { tempDir } from '../support/databases.js'
import { eventually } from '../support/eventually.js'
import { startProducer } from './msg-process.js'
import { createOrders, openProducerDb, type ProducerDb } from './producer-db.js'

describe.each(['postgres', 'mysql'] as const)('check-back racing a slow local transaction (%s)', (dialect) => {
  const tmp = tempDir()
  const storeUrl = `sqlite:${tmp.dir}/tx.db`
  let p: ProducerDb
  let tc: Coordinator
  const calls: string[] = []

  beforeAll(async () => {
    p = openProducerDb(dialect)
    await createOrders(p)
    tc = createCoordinator({ store: storeUrl, recoverEveryMs: 100, retry: { firstMs: 20, maxMs: 200, attempts: 50 } })
    tc.msg('order-created', { checkBack: p.other, barrierTable: p.barrierTable }).add(({ gid }) => void calls.push(gid))
  })
  afterAll(async () => {
    await tc?.close()
    await p?.drop()
    tmp.remove()
  })

  /** Whether our check-back's insert is waiting on a row lock right now. */
  async function checkBackWaiting(): Promise<boolean> {
    const rows =
      dialect === 'postgres'
        ? await p.sql("SELECT COUNT(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE ?", [
            `INSERT INTO ${p.barrierTable}%`,
          ])
        : // A one-row autocommit insert still running after 200 ms waits on a lock (MariaDB shows it as "Update").
          await p.sql(
            "SELECT COUNT(*) AS n FROM information_schema.processlist WHERE command = 'Query' AND time_ms >= 200 AND info LIKE ?",
            [`INSERT IGNORE INTO ${p.barrierTable}%`],
          )
    return Number(rows[0]?.n) > 0
  }

  it.each(['commit', 'rollback'] as const)(
    'the producer resumes and decides to %s: the waiting check-back answers that',
    async (decision) => {
      const gid = `${p.prefix}race-${decision}`
      const producer = startProducer(p.spec, storeUrl, gid, 'hold')
      try {
        await producer.waitFor('local-started')
        producer.child.kill('SIGSTOP')
        await eventually(checkBackWaiting, 20_000)
        const waiting = await tc.get(gid)
        expect(waiting?.status).toBe('prepared')
        expect(waiting?.branches.find((b) => b.id === 'local')).toMatchObject({ status: 'running', attempts: 1 })
        producer.child.kill('SIGCONT')
        producer.child.stdin?.write(`${decision}\n`)
        const done = await eventually(async () => {
          const tx = await tc.get(gid)
          return (tx?.status === 'succeeded' || tx?.status === 'failed') && tx
        }, 20_000)
        expect(await producer.exited).toBe('0')
        const local = done.branches.find((b) => b.id === 'local')
        if (decision === 'commit') {
          expect(done.status).toBe('succeeded')
          expect(local).toMatchObject({ result: 'committed', attempts: 1 })
          expect(calls.filter((c) => c === gid)).toHaveLength(1)
          expect(await p.orders(gid)).toBe(1)
          expect(await p.barrierReason(gid)).toBe('msg')
        } else {
          expect(done.status).toBe('failed')
          expect(local).toMatchObject({ result: 'rolled-back', attempts: 1 })
          expect(calls).not.toContain(gid)
          expect(await p.orders(gid)).toBe(0)
          expect(await p.barrierReason(gid)).toBe('rollback')
          expect(producer.lines).toContain(`rejected ${'told to rollback'}`)
        }
        // The producer woke up past its lease: its own submit was refused, it never called a branch.
        expect(producer.lines).not.toContain('branch-called')
        expect(await queryPrepared(p.other, gid, { table: p.barrierTable })).toBe(
          decision === 'commit' ? 'committed' : 'rolled-back',
        )
      } finally {
        if (producer.child.exitCode === null && producer.child.signalCode === null) {
          producer.child.kill('SIGCONT')
          producer.child.kill('SIGKILL')
        }
      }
    },
  )
})
