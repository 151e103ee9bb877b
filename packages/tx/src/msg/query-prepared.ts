import { barrierSql, DEFAULT_BARRIER_TABLE } from '../barrier/barrier-sql.js'
import { checkId } from '../branch.js'
import { TxError } from '../errors.js'
import { autocommitHandle, producerKind, withBarrierTable } from './producer-db.js'

/** The outcome of a transactional message's local transaction, as the check-back finds it. */
export type LocalOutcome = 'committed' | 'rolled-back'

/**
 * The message's barrier row, DTM's key for it: inserted with reason `msg` inside the local transaction, or with
 * reason `rollback` by the check-back.
 */
export const MSG_BARRIER = { branch: '00', op: 'msg', barrierId: '01' } as const

/**
 * The check-back (DTM's `QueryPrepared`): did the local transaction of message `gid` commit? Always a
 * definitive answer. It insert-ignores the message's barrier row with reason `rollback`, in autocommit:
 * - the local transaction committed its row: the insert does nothing, the row says `msg` → `committed`;
 * - it is still open: its uncommitted row holds the unique key and the insert waits for it to end (PostgreSQL,
 *   MariaDB/MySQL wait on the key; SQLite on the write lock its `BEGIN IMMEDIATE` took), then one of the two;
 * - it rolled back, or never started: the insert wins → `rolled-back`, and from then on the local transaction's
 *   own insert finds the key taken, so it can never commit (`doAndSubmit` rolls it back).
 *
 * Use it in the producer's check-back endpoint when the coordinator cannot reach the database directly:
 * answer 200 for `committed`, 409 for `rolled-back` (DTM's protocol).
 *
 * @example
 * app.get('/query-prepared', async (req, reply) =>
 *   reply.code((await queryPrepared(pool, req.query.gid)) === 'committed' ? 200 : 409).send())
 */
export async function queryPrepared(db: object, gid: string, options: { table?: string } = {}): Promise<LocalOutcome> {
  checkId('gid', gid)
  const table = options.table ?? DEFAULT_BARRIER_TABLE
  if (producerKind(db, 'queryPrepared') === 'sqlite' && (db as { inTransaction: boolean }).inTransaction) {
    // The insert would join that transaction: its answer would not be durable yet.
    throw new TxError('latchkey-tx: queryPrepared: the better-sqlite3 Database has a transaction open; retry later', {
      code: 'CHECK_BACK_BUSY',
      retryable: true,
      gid,
    })
  }
  const sql = barrierSql(autocommitHandle(db), table)
  const row = { gid, ...MSG_BARRIER }
  await withBarrierTable(db, table, () => sql.insertIgnore({ ...row, reason: 'rollback' }))
  const reason = await sql.reasonOf(row)
  if (reason === undefined) {
    throw new TxError(`latchkey-tx: queryPrepared found no barrier row for ${gid} after inserting it`, {
      code: 'CHECK_BACK_FAILED',
      retryable: true,
      gid,
    })
  }
  return reason === 'rollback' ? 'rolled-back' : 'committed'
}
