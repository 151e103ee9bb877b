/**
 * A participant's or producer's own database, as the application hands it over: a `pg` Pool, a mysql2 pool
 * (promise API, or the callback one, whose `.promise()` is used) or a better-sqlite3 Database. Recognised by
 * shape (no driver is imported), and one local transaction opened on it. The transactional message, the
 * fastify participant plugin and the 3PC participant all run their local transactions through this file.
 */

/** The isolation level of a local transaction (PostgreSQL, MariaDB/MySQL; SQLite transactions are serializable). */
export type Isolation = 'READ COMMITTED' | 'REPEATABLE READ' | 'SERIALIZABLE'

export const ISOLATIONS: readonly Isolation[] = ['READ COMMITTED', 'REPEATABLE READ', 'SERIALIZABLE']

/** One open transaction. `commit` and `rollback` each settle it once; whichever comes second does nothing. */
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
  exec(sql: string): unknown
}

const has = (value: object, name: string) => typeof (value as Record<string, unknown>)[name] === 'function'

/** The kind of database `db` is (no I/O); a TypeError says what is accepted, prefixed with `who`. */
export function localDbKind(db: unknown, who: string): 'sqlite' | 'postgres' | 'mysql' {
  if (typeof db === 'object' && db !== null) {
    if (has(db, 'prepare') && has(db, 'exec') && 'inTransaction' in db) return 'sqlite'
    if (has(db, 'connect') && 'totalCount' in db) return 'postgres'
    if (has(db, 'getConnection')) return 'mysql'
  }
  throw new TypeError(
    `${who} must be a pg Pool, a mysql2 pool or a better-sqlite3 Database, received ${db === null ? 'null' : typeof db}`,
  )
}

/** Checks an isolation level before any I/O. */
export function checkIsolation(isolation: unknown, who: string): Isolation | undefined {
  if (isolation === undefined || ISOLATIONS.includes(isolation as Isolation)) return isolation as Isolation | undefined
  throw new RangeError(
    `${who} isolation must be one of ${ISOLATIONS.join(', ')}, received ${JSON.stringify(isolation)}`,
  )
}

/** A mysql2 callback pool's promise wrapper (the same pool), or the promise pool itself. */
export function mysqlPool(db: object): MysqlPoolLike {
  // Only the callback pool has promise(); the promise pool does not.
  return (has(db, 'promise') ? (db as { promise(): object }).promise() : db) as MysqlPoolLike
}

/** Settles once: the first of commit/rollback runs, later calls resolve at once. */
function once(commit: () => Promise<void>, rollback: () => Promise<void>) {
  let settled = false
  const guard = (fn: () => Promise<void>) => async () => {
    if (settled) return
    settled = true
    await fn()
  }
  return { commit: guard(commit), rollback: guard(rollback) }
}

/**
 * Begins a transaction on `db`. A connection whose COMMIT or ROLLBACK failed is in an unknown state: it is
 * destroyed, never handed out again (the server rolls back what it sees abandoned).
 */
export async function beginLocal(db: object, who: string, isolation?: Isolation): Promise<OpenTransaction> {
  const kind = localDbKind(db, who)
  if (kind === 'sqlite') {
    const s = db as SqliteLike
    if (s.inTransaction) throw new TypeError(`${who}: the better-sqlite3 Database already has a transaction open`)
    // IMMEDIATE takes the write lock now: a reader on another connection (a check-back) waits for this one.
    s.exec('BEGIN IMMEDIATE')
    return {
      trx: db,
      ...once(
        async () => void s.exec('COMMIT'),
        async () => {
          if (s.inTransaction) s.exec('ROLLBACK')
        },
      ),
    }
  }
  if (kind === 'postgres') {
    const client = await (db as PgPoolLike).connect()
    try {
      await client.query(isolation === undefined ? 'BEGIN' : `BEGIN ISOLATION LEVEL ${isolation}`)
    } catch (error) {
      client.release(true)
      throw error
    }
    const end = (sql: string, rethrow: boolean) => async () => {
      try {
        await client.query(sql)
        client.release()
      } catch (error) {
        client.release(true)
        if (rethrow) throw error
      }
    }
    return { trx: client, ...once(end('COMMIT', true), end('ROLLBACK', false)) }
  }
  const conn = await mysqlPool(db).getConnection()
  try {
    // SET TRANSACTION applies to the next transaction of this session only.
    if (isolation !== undefined) await conn.query(`SET TRANSACTION ISOLATION LEVEL ${isolation}`)
    await conn.beginTransaction()
  } catch (error) {
    conn.destroy?.()
    throw error
  }
  const end = (fn: () => Promise<void>, rethrow: boolean) => async () => {
    try {
      await fn()
      conn.release()
    } catch (error) {
      conn.destroy?.()
      if (rethrow) throw error
    }
  }
  return {
    trx: conn,
    ...once(
      end(() => conn.commit(), true),
      end(() => conn.rollback(), false),
    ),
  }
}
