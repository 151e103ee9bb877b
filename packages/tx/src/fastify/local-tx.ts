/**
 * Runs a function inside a new local transaction on the participant's own database: a pg Pool, a mysql2/promise
 * pool or a better-sqlite3 database. Commit when it resolves, roll back when it rejects.
 */

/** The isolation level of a participant's local transactions (PostgreSQL, MariaDB/MySQL). */
export type Isolation = 'READ COMMITTED' | 'REPEATABLE READ' | 'SERIALIZABLE'

/** Runs `fn(trx)` in a transaction; the connection is returned to its pool afterwards. */
export type InTransaction = <T>(fn: (trx: unknown) => Promise<T>) => Promise<T>

interface PgClientLike {
  query(sql: string): Promise<unknown>
  release(error?: Error | boolean): void
}
interface PgPoolLike {
  connect(): Promise<PgClientLike>
  totalCount: number
}
interface MysqlConnLike {
  query(sql: string): Promise<unknown>
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
  prepare(sql: string): unknown
  exec(sql: string): unknown
}

const ISOLATIONS: readonly Isolation[] = ['READ COMMITTED', 'REPEATABLE READ', 'SERIALIZABLE']

/**
 * The transaction runner for `db`, recognised by shape. Throws a TypeError naming `db` when it is none of the
 * three, and a RangeError for an unknown isolation, before any I/O.
 */
export function transactionRunner(db: unknown, isolation?: Isolation): InTransaction {
  if (isolation !== undefined && !ISOLATIONS.includes(isolation)) {
    throw new RangeError(
      `latchkey-tx/fastify: isolation must be one of ${ISOLATIONS.join(', ')}, received ${JSON.stringify(isolation)}`,
    )
  }
  const h = db as Partial<PgPoolLike & MysqlPoolLike & SqliteLike> | null
  if (typeof h === 'object' && h !== null) {
    if (typeof h.prepare === 'function' && 'inTransaction' in h) return sqliteRunner(h as SqliteLike)
    if (typeof h.getConnection === 'function') return mysqlRunner(h as MysqlPoolLike, isolation)
    if (typeof h.connect === 'function' && 'totalCount' in h) return pgRunner(h as PgPoolLike, isolation)
  }
  throw new TypeError(
    'latchkey-tx/fastify: db must be a pg Pool, a mysql2/promise pool or a better-sqlite3 database, ' +
      `received ${h === null ? 'null' : typeof h}`,
  )
}

function pgRunner(pool: PgPoolLike, isolation: Isolation | undefined): InTransaction {
  const begin = isolation === undefined ? 'BEGIN' : `BEGIN ISOLATION LEVEL ${isolation}`
  return async (fn) => {
    const client = await pool.connect()
    let broken = false
    try {
      await client.query(begin)
      const result = await fn(client)
      await client.query('COMMIT')
      return result
    } catch (error) {
      // A connection whose ROLLBACK fails is in an unknown state: destroy it rather than hand it out again.
      await client.query('ROLLBACK').catch(() => {
        broken = true
      })
      throw error
    } finally {
      client.release(broken)
    }
  }
}

function mysqlRunner(pool: MysqlPoolLike, isolation: Isolation | undefined): InTransaction {
  return async (fn) => {
    const conn = await pool.getConnection()
    let broken = false
    try {
      // SET TRANSACTION applies to the next transaction of this session only.
      if (isolation !== undefined) await conn.query(`SET TRANSACTION ISOLATION LEVEL ${isolation}`)
      await conn.beginTransaction()
      const result = await fn(conn)
      await conn.commit()
      return result
    } catch (error) {
      await conn.rollback().catch(() => {
        broken = true
      })
      throw error
    } finally {
      if (broken && conn.destroy) conn.destroy()
      else conn.release()
    }
  }
}

/**
 * better-sqlite3 has one connection: a second BEGIN while a handler awaits would fail, so calls are queued and
 * run one at a time (SQLite serialises writers anyway).
 */
function sqliteRunner(db: SqliteLike): InTransaction {
  let queue: Promise<unknown> = Promise.resolve()
  return (fn) => {
    const run = async () => {
      db.exec('BEGIN IMMEDIATE')
      try {
        const result = await fn(db)
        db.exec('COMMIT')
        return result
      } catch (error) {
        if (db.inTransaction) db.exec('ROLLBACK')
        throw error
      }
    }
    const next = queue.then(run, run)
    queue = next.catch(() => undefined)
    return next
  }
}
