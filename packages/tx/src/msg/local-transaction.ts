import { barrierSql } from '../barrier/barrier-sql.js'
import { TxError } from '../errors.js'
import { msgCrashPoint } from './crash-point.js'
import { beginLocal, type OpenTransaction, withBarrierTable } from './producer-db.js'
import { MSG_BARRIER } from './query-prepared.js'

/**
 * Runs a message's local transaction: BEGIN, the barrier row (reason `msg`) first, the business function, COMMIT.
 * `onValue` receives the business function's result before COMMIT is sent (so that a commit whose outcome is
 * unknown still leaves the value with the caller). Rejects with the business error or the database error,
 * after rolling back.
 */
export async function runLocalTransaction<T>(
  db: object,
  gid: string,
  table: string,
  local: (trx: object) => T | Promise<T>,
  onValue: (value: T) => void,
): Promise<T> {
  const tx = await withBarrierTable(db, table, () => beginWithBarrierRow(db, gid, table))
  let value: T
  try {
    value = await local(tx.trx)
    onValue(value)
  } catch (error) {
    await tx.rollback()
    throw error
  }
  msgCrashPoint('msg:before-local-commit')
  await tx.commit()
  msgCrashPoint('msg:after-local-commit')
  return value
}

/** BEGIN, then the barrier row first: a check-back that came earlier owns the key, and then nothing may commit. */
async function beginWithBarrierRow(db: object, gid: string, table: string): Promise<OpenTransaction> {
  const tx = await beginLocal(db, 'latchkey-tx: doAndSubmit')
  let inserted: boolean
  try {
    inserted = await barrierSql(tx.trx, table).insertIgnore({ gid, ...MSG_BARRIER, reason: 'msg' })
  } catch (error) {
    await tx.rollback()
    throw error
  }
  if (inserted) return tx
  await tx.rollback()
  throw new TxError(
    `Message ${gid}: the coordinator's check-back already settled it as rolled back; the local transaction is refused`,
    { code: 'MSG_ROLLED_BACK', gid },
  )
}
