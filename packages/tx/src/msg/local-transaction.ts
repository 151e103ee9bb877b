import { barrierSql } from '../barrier/barrier-sql.js'
import { TxError } from '../errors.js'
import { msgCrashPoint } from './crash-point.js'
import { beginLocal, ensureTableOnce } from './producer-db.js'
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
  await ensureTableOnce(db, table)
  const tx = await beginLocal(db, 'doAndSubmit')
  let value: T
  try {
    // The row first: a check-back that came earlier owns the key, and this transaction must not commit.
    const inserted = await barrierSql(tx.trx, table).insertIgnore({ gid, ...MSG_BARRIER, reason: 'msg' })
    if (!inserted) {
      throw new TxError(
        `Message ${gid}: the coordinator's check-back already settled it as rolled back; the local transaction is refused`,
        { code: 'MSG_ROLLED_BACK', gid },
      )
    }
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
