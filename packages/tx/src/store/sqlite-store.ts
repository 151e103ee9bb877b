import { createRequire } from 'node:module'
import { sqliteBackend } from 'latchkey/sqlite'
import { TxError } from '../errors.js'
import { checkPrefix, DEFAULT_PREFIX } from './schema.js'
import { type Row, SerialQueue, type SqlDriver, type SqlQuery } from './sql-driver.js'
import { SqlTxStore } from './sql-store.js'
import type { TxStore } from './types.js'

/** The slice of a better-sqlite3 `Database` the store uses. */
export interface SqliteDatabase {
  readonly name: string
  readonly memory: boolean
  pragma(source: string): unknown
  prepare(source: string): {
    readonly reader: boolean
    run(...params: unknown[]): { changes: number }
    all(...params: unknown[]): unknown[]
  }
  close(): unknown
}

/** Options of {@link sqliteStore}: a file path (opened and closed by the store) or an open better-sqlite3 database. */
export type SqliteStoreOptions = (
  | { path: string; database?: undefined }
  | { database: SqliteDatabase; path?: undefined }
) & {
  /** Table prefix. Default `latchkey_tx_`. */
  tablePrefix?: string
}

const require = createRequire(import.meta.url)

/**
 * The log in a SQLite file (better-sqlite3 12.x): the embedded default, for every coordinator on one host.
 * Row leases (recovery leases on each transaction's own row); `lockBackend()` is latchkey's SQLite backend on a
 * file beside the log.
 *
 * @example
 * const store = sqliteStore({ path: './tx.db' })
 * const tc = createCoordinator({ store })
 */
export function sqliteStore(options: SqliteStoreOptions): TxStore {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`latchkey-tx: sqliteStore needs an options object, received ${String(options)}`)
  }
  const prefix = checkPrefix(options.tablePrefix ?? DEFAULT_PREFIX)
  let db: SqliteDatabase
  let owned = false
  if (options.database !== undefined) {
    if (typeof options.database.prepare !== 'function') {
      throw new TypeError('latchkey-tx: sqliteStore options.database must be a better-sqlite3 Database')
    }
    db = options.database
  } else {
    if (typeof options.path !== 'string' || options.path.length === 0) {
      throw new TypeError(
        `latchkey-tx: sqliteStore needs options.path or options.database, received path ${String(options.path)}`,
      )
    }
    db = openDatabase(options.path)
    owned = true
  }
  const path = db.memory ? undefined : db.name
  // The leases live in a file of their own beside the log. On the log's own file they would take a second
  // connection to it in this process, and better-sqlite3 waits for a busy file synchronously: a lease write
  // while the log's connection holds a transaction open across an await froze the whole process for the 5 s
  // busy timeout, whenever two transactions ran at once. Every process sharing the log derives the same path.
  const makeBackend = () =>
    path === undefined ? sqliteBackend({ database: db as never }) : sqliteBackend({ path: `${path}-leases` })
  return new SqlTxStore(sqliteDriver(db, owned), prefix, makeBackend)
}

function openDatabase(path: string): SqliteDatabase {
  let Database: new (path: string) => SqliteDatabase
  try {
    Database = require('better-sqlite3')
  } catch (error) {
    throw new TxError('latchkey-tx: the SQLite store needs better-sqlite3 12.x: npm install better-sqlite3', {
      code: 'MISSING_PEER',
      cause: error,
    })
  }
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  db.pragma('busy_timeout = 5000')
  return db
}

/** One queue per database file in this process: see {@link sqliteDriver}. */
const queues = new Map<string, { queue: SerialQueue; users: number }>()

/**
 * better-sqlite3 is synchronous: a BEGIN that waits for another connection's write lock blocks the whole thread.
 * If that other connection is in this process, with a transaction open across an `await`, it can never commit
 * and both stall until the busy timeout. So every transaction on one file in this process goes through one
 * queue; other processes are waited for by SQLite's busy timeout as usual.
 */
function sqliteDriver(db: SqliteDatabase, owned: boolean): SqlDriver {
  const key = db.memory ? `memory:${Math.random()}` : db.name
  const shared = queues.get(key) ?? { queue: new SerialQueue(), users: 0 }
  shared.users++
  queues.set(key, shared)
  const queue = shared.queue
  const query: SqlQuery = async (sql, params = []) => {
    const statement = db.prepare(sql)
    if (statement.reader) return { rows: statement.all(...params) as Row[], affected: 0 }
    return { rows: [], affected: statement.run(...params).changes }
  }
  return {
    dialect: 'sqlite',
    query: (sql, params) => queue.run(() => query(sql, params)),
    transaction: (fn) =>
      queue.run(async () => {
        db.prepare('BEGIN IMMEDIATE').run()
        try {
          const result = await fn(query)
          db.prepare('COMMIT').run()
          return result
        } catch (error) {
          db.prepare('ROLLBACK').run()
          throw error
        }
      }),
    close: async () => {
      await queue.run(async () => {
        if (owned) db.close()
      })
      if (--shared.users === 0) queues.delete(key)
    },
  }
}
