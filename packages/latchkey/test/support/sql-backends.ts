/**
 * Backends over the test databases, for the MySQL / PostgreSQL test files and for the conformance suite's
 * child processes (`processBackend.module`). Each backend made here owns the pool it opened: its `close()`
 * closes the backend, then ends the pool, so a child process exits by itself.
 */
import mysql from 'mysql2/promise'
import pg from 'pg'
import type { Backend } from '../../src/backend/types.js'
import { type MysqlStrategy, mysqlBackend } from '../../src/backends/mysql/index.js'
import { type PostgresStrategy, postgresBackend } from '../../src/backends/postgres/index.js'

/**
 * The conformance suite's `timeScale` (its documented knob for slow backends) on these servers: every call is
 * a network round trip to a server shared with other test runs on a 2-core machine, where a round trip now and
 * then takes 20-60 ms, more than the 30 ms renew period of the suite's 90 ms leases. The table strategy also commits
 * (fsync) on every acquire, renew and release, and grants of one lock are serialised on its row: one grant
 * took 10-30 ms under that load, more than the suite's 10 ms semaphore hold.
 */
export const SESSION_TIME_SCALE = 2
export const TABLE_TIME_SCALE = 3

export const MYSQL_URL = process.env.LATCHKEY_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'
export const POSTGRES_URL = process.env.LATCHKEY_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

/** A mysql2 promise pool on the test database. */
export function mysqlPool(options: mysql.PoolOptions = {}): mysql.Pool {
  return mysql.createPool({ uri: MYSQL_URL, connectionLimit: 10, ...options })
}

/** A pg pool on the test database. */
export function postgresPool(options: pg.PoolConfig = {}): pg.Pool {
  const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 10, ...options })
  // An idle client killed by the server is reported here; the pool replaces it.
  pool.on('error', () => undefined)
  return pool
}

/** Wraps `backend` so that `close()` also ends the pool it runs on. */
export function owningPool(backend: Backend, end: () => Promise<void>): Backend {
  const close = backend.close.bind(backend)
  return Object.assign(backend, {
    close: async () => {
      await close()
      await end()
    },
  })
}

export function mysqlWithPool(strategy: MysqlStrategy): Backend {
  const pool = mysqlPool()
  return owningPool(mysqlBackend({ pool, strategy }), () => pool.end())
}

export function postgresWithPool(strategy: PostgresStrategy): Backend {
  const pool = postgresPool()
  return owningPool(postgresBackend({ pool, strategy }), () => pool.end())
}

export const createMysqlTable = (): Backend => mysqlWithPool('table')
export const createMysqlGetLock = (): Backend => mysqlWithPool('get_lock')
export const createMysqlForUpdate = (): Backend => mysqlWithPool('for_update')
export const createPostgresTable = (): Backend => postgresWithPool('table')
export const createPostgresAdvisory = (): Backend => postgresWithPool('advisory')

const MYSQL_TABLES = ['latchkey_holders', 'latchkey_waiters', 'latchkey_locks', 'latchkey_row_locks', 'latchkey_fences']

/** Deletes the MySQL rows of every lock whose name starts with `namespace` (tables that exist only). */
export async function cleanupMysql(namespace: string): Promise<void> {
  const pool = mysqlPool({ connectionLimit: 1 })
  try {
    // A row still locked by a leftover for_update holder must fail the cleanup, not stall it for 50 s.
    await pool.query('SET SESSION innodb_lock_wait_timeout = 5')
    const [rows] = await pool.query(
      'SELECT table_name AS t FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name IN (?)',
      [MYSQL_TABLES],
    )
    for (const { t } of rows as { t: string }[]) {
      // Table names come from the fixed list above; the prefix is a parameter.
      await pool.query(`DELETE FROM ${t} WHERE LEFT(lock_key, LENGTH(?)) = ?`, [namespace, namespace])
    }
  } finally {
    await pool.end()
  }
}

const POSTGRES_TABLES = ['latchkey_holders', 'latchkey_waiters', 'latchkey_locks']

/** Deletes the PostgreSQL rows of every lock whose name starts with `namespace` (tables that exist only). */
export async function cleanupPostgres(namespace: string): Promise<void> {
  const pool = postgresPool({ max: 1 })
  try {
    const prefix = Buffer.from(namespace, 'utf8')
    for (const t of POSTGRES_TABLES) {
      const { rows } = await pool.query('SELECT to_regclass($1) IS NOT NULL AS ok', [t])
      if (rows[0]?.ok !== true) continue
      await pool.query(`DELETE FROM ${t} WHERE substring(lock_key FROM 1 FOR $2) = $1`, [prefix, prefix.length])
    }
  } finally {
    await pool.end()
  }
}
