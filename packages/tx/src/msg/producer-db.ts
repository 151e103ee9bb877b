/**
 * The producer's database as handed to `doAndSubmit(db, …)` and to the check-back: a `pg` Pool, a mysql2 pool
 * (promise API, or the callback one, whose `.promise()` is used) or a better-sqlite3 Database. This file opens
 * one local transaction on it, and creates the barrier table once per handle.
 */
import { barrierSql } from '../barrier/barrier-sql.js'

/** One open transaction on the producer's database. */
export interface OpenTransaction {
  /** What the business function receives: a pg PoolClient, a mysql2/promise PoolConnection, the sqlite Database. */
  readonly trx: object
  commit(): Promise<void>
  rollback(): Promise<void>
}

interface PgPoolLike {
  connect(): Promise<{ query(sql: string): Promise<unknown>; release(destroy?: boolean | Error): void }>
}
interface MysqlConnLike {
  beginTransaction(): Promise<void>
  commit(): Promise<void>
  rollback(): Promise<void>
  release(): void
  destroy?(): void
}
interface MysqlPoolLike {
  getConnection(): Promise<MysqlConnLike>
}
interface SqliteLike {
  readonly inTransaction: boolean
  exec(sql: string): unknown
}

const has = (value: object, name: string) => typeof (value as Record<string, unknown>)[name] === 'function'

/** The kind of producer database `db` is (no I/O); a TypeError names what is accepted. */
export function producerKind(db: unknown, who: string): 'sqlite' | 'postgres' | 'mysql' {
  if (typeof db === 'object' && db !== null) {
    if (has(db, 'prepare') && has(db, 'exec') && 'inTransaction' in db) return 'sqlite'
    if (has(db, 'connect') && 'totalCount' in db) return 'postgres'
    if (has(db, 'getConnection')) return 'mysql'
  }
  throw new TypeError(
    `latchkey-tx: ${who} needs the producer's database: a pg Pool, a mysql2 pool or a better-sqlite3 Database`,
  )
}

/** A mysql2 callback pool's promise wrapper (the same pool), or the promise pool itself. */
function mysqlPool(db: object): MysqlPoolLike {
  // Only the callback pool has promise(); the promise pool does not.
  return (has(db, 'promise') ? (db as { promise(): object }).promise() : db) as MysqlPoolLike
}

/** Begins a transaction on the producer's database. */
export async function beginLocal(db: object, who: string): Promise<OpenTransaction> {
  const kind = producerKind(db, who)
  if (kind === 'sqlite') {
    const s = db as SqliteLike
    if (s.inTransaction) {
      throw new TypeError(`latchkey-tx: ${who}: the better-sqlite3 Database already has a transaction open`)
    }
    // IMMEDIATE takes the write lock now: a check-back from another connection waits for this transaction.
    s.exec('BEGIN IMMEDIATE')
    return {
      trx: db,
      commit: async () => void s.exec('COMMIT'),
      rollback: async () => {
        if (s.inTransaction) s.exec('ROLLBACK')
      },
    }
  }
  if (kind === 'postgres') {
    const client = await (db as PgPoolLike).connect()
    try {
      await client.query('BEGIN')
    } catch (error) {
      client.release(true)
      throw error
    }
    return {
      trx: client,
      commit: async () => {
        try {
          await client.query('COMMIT')
          client.release()
        } catch (error) {
          client.release(true)
          throw error
        }
      },
      rollback: async () => {
        try {
          await client.query('ROLLBACK')
          client.release()
        } catch {
          // The connection is broken: the server rolls the transaction back when it sees it gone.
          client.release(true)
        }
      },
    }
  }
  const conn = await mysqlPool(db).getConnection()
  try {
    await conn.beginTransaction()
  } catch (error) {
    conn.destroy?.()
    throw error
  }
  return {
    trx: conn,
    commit: async () => {
      try {
        await conn.commit()
        conn.release()
      } catch (error) {
        conn.destroy?.()
        throw error
      }
    },
    rollback: async () => {
      try {
        await conn.rollback()
        conn.release()
      } catch {
        conn.destroy?.()
      }
    },
  }
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
