import { checkOptions } from '../core/validate.js'
import type { FenceStore } from './fence-guard.js'
import {
  type FenceDialect,
  type MysqlPoolLike,
  mysqlFence,
  type PgPoolLike,
  postgresFence,
  type SqliteDatabaseLike,
  sqliteFence,
} from './sql-fence-dialects.js'

/** Options of {@link sqlFenceStore}. */
export interface SqlFenceStoreOptions {
  /** A `pg` Pool, a `mysql2` pool (promise or callback API) or a better-sqlite3 `Database`. Never closed. */
  pool: PgPoolLike | MysqlPoolLike | { promise(): MysqlPoolLike } | SqliteDatabaseLike
  /** The pool's dialect. Default: recognised from the pool object. */
  dialect?: 'postgres' | 'mysql' | 'sqlite'
}

const DIALECTS = ['postgres', 'mysql', 'sqlite'] as const

/** Recognises the driver by the methods only it has. */
function detect(pool: Record<string, unknown>): (typeof DIALECTS)[number] | undefined {
  if (typeof pool.prepare === 'function' && typeof pool.exec === 'function') return 'sqlite'
  if (typeof pool.getConnection === 'function') return 'mysql'
  if (typeof pool.connect === 'function' && typeof pool.query === 'function') return 'postgres'
  return undefined
}

function dialectFor(pool: Record<string, unknown>, dialect: (typeof DIALECTS)[number]): FenceDialect {
  if (dialect === 'sqlite') return sqliteFence(pool as unknown as SqliteDatabaseLike)
  if (dialect === 'postgres') return postgresFence(pool as unknown as PgPoolLike)
  // mysql2's callback pool (`mysql.createPool` from 'mysql2') has the promise API behind `.promise()`.
  const promised = typeof pool.promise === 'function' ? (pool.promise as () => MysqlPoolLike)() : pool
  return mysqlFence(promised as unknown as MysqlPoolLike)
}

/**
 * A fence store in a SQL table `latchkey_fence (name PRIMARY KEY, token)`, created on first use if missing:
 * one row per name holding the highest token admitted, written by an atomic upsert-if-not-lower. Works with
 * PostgreSQL (`pg` Pool), MySQL / MariaDB (`mysql2` pool) and SQLite (better-sqlite3 `Database`); rows are
 * never deleted (a deleted row would admit a stale token). Tokens must fit a signed 64-bit BIGINT.
 *
 * @example
 * const guard = createFenceGuard(sqlFenceStore({ pool: new pg.Pool() }))   // dialect recognised: postgres
 * await guard.admit('account:7', lease.token)
 */
export function sqlFenceStore(options: SqlFenceStoreOptions): FenceStore {
  const o = checkOptions('options', options)
  if (o.dialect !== undefined && !DIALECTS.includes(o.dialect as never)) {
    throw new RangeError(`latchkey: dialect must be "postgres", "mysql" or "sqlite", received ${String(o.dialect)}`)
  }
  const pool = o.pool as Record<string, unknown> | undefined
  const dialect = (o.dialect as (typeof DIALECTS)[number] | undefined) ?? (pool ? detect(pool) : undefined)
  if (typeof pool !== 'object' || pool === null || dialect === undefined) {
    throw new TypeError(
      `latchkey: sqlFenceStore needs options.pool, a pg Pool, a mysql2 pool or a better-sqlite3 Database, received ${pool === null ? 'null' : typeof pool}`,
    )
  }
  const db = dialectFor(pool, dialect)
  let created: Promise<void> | undefined
  return {
    async admit(name, token) {
      // Once per store; a failure (server down) is retried by the next admit.
      created ??= db.createTable().catch((error: unknown) => {
        created = undefined
        throw error
      })
      await created
      return db.admit(name, token)
    },
  }
}
