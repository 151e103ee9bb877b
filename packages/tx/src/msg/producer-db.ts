/**
 * The producer's database as handed to `doAndSubmit(db, …)` and to the check-back (see ../local-db.ts for the
 * handles accepted and how a local transaction is opened on them). This file creates the barrier table once per
 * handle and gives the autocommit handle the check-back's statements run on.
 */
import { barrierSql } from '../barrier/barrier-sql.js'
import { localDbKind, mysqlPool } from '../local-db.js'

export { beginLocal, type OpenTransaction } from '../local-db.js'

/** The kind of producer database `db` is (no I/O); a TypeError names what is accepted. */
export function producerKind(db: unknown, who: string): 'sqlite' | 'postgres' | 'mysql' {
  return localDbKind(db, `latchkey-tx: ${who}: the producer's database`)
}

/** The handle the barrier statements run on outside a transaction (autocommit). */
export function autocommitHandle(db: object): object {
  return producerKind(db, 'the check-back') === 'mysql' ? mysqlPool(db) : db
}

/** Whether `error` says the table is missing (PostgreSQL, MariaDB/MySQL, SQLite wordings). */
export function isMissingTable(error: unknown): boolean {
  const text = String((error as { message?: unknown })?.message ?? error)
  return /does not exist|doesn't exist|no such table/i.test(text)
}

/**
 * Runs `statement`; when the barrier table is missing, creates it (outside any transaction) and runs it again.
 * Created on demand, never up front: on MariaDB/MySQL a CREATE TABLE IF NOT EXISTS of an existing table waits
 * for the metadata lock every open transaction on it holds, so an eager one would wait for in-flight messages.
 */
export async function withBarrierTable<T>(db: object, table: string, statement: () => Promise<T>): Promise<T> {
  try {
    return await statement()
  } catch (error) {
    if (!isMissingTable(error)) throw error
    await barrierSql(autocommitHandle(db), table).createTable()
    return statement()
  }
}
