import type { Backend } from '../../backend/types.js'
import { checkOptions } from '../../core/validate.js'
import { backendLabel, strategyOption } from '../sql/sql-options.js'
import { checkTimeout, DEFAULT_CONNECT_TIMEOUT_MS } from '../sql/sql-pin.js'
import {
  type MysqlCallbackPool,
  type MysqlConnection,
  type MysqlPool,
  MysqlRunner,
  mysqlServer,
  promisePool,
} from './mysql-client.js'
import { MysqlForUpdateBackend } from './mysql-for-update-backend.js'
import { getLockName, MysqlGetLockBackend } from './mysql-get-lock-backend.js'
import { MYSQL_ADD_PERMITS, MYSQL_MIGRATION, MYSQL_MIGRATION_STATEMENTS } from './mysql-schema.js'
import { MysqlTableBackend } from './mysql-table-backend.js'
import { openMysqlBackend } from './mysql-url.js'

export {
  getLockName,
  MYSQL_ADD_PERMITS,
  MYSQL_MIGRATION,
  MYSQL_MIGRATION_STATEMENTS,
  type MysqlCallbackPool,
  type MysqlConnection,
  MysqlForUpdateBackend,
  MysqlGetLockBackend,
  type MysqlPool,
  MysqlTableBackend,
}

/** How the MySQL backend locks. See {@link mysqlBackend}. */
export type MysqlStrategy = 'table' | 'get_lock' | 'for_update'

/** Options of {@link mysqlBackend}. */
export interface MysqlBackendOptions {
  /** A mysql2 pool (`createPool` from `mysql2/promise`, or a callback pool). Never closed by the backend. */
  pool: MysqlPool | MysqlCallbackPool
  /** Default `'table'`. */
  strategy?: MysqlStrategy
  /** How long to wait for a free pool connection before failing with `BackendUnavailableError`. Default 5 000. */
  connectTimeoutMs?: number
}

const STRATEGIES: readonly MysqlStrategy[] = ['table', 'get_lock', 'for_update']

/**
 * Locks in MySQL 8 / MariaDB 10.6+ through a mysql2 pool. Strategies:
 *
 * | strategy | kinds | fencing | lease clock | notes |
 * | --- | --- | --- | --- | --- |
 * | `'table'` (default) | all | native (per-lock counter) | database | rows in `latchkey_*` tables, created on first use |
 * | `'get_lock'` | mutex | none | this process | `GET_LOCK` on a pinned connection; a dropped connection is a lost lease |
 * | `'for_update'` | mutex | native | this process | an open transaction holding `FOR UPDATE` on a pinned connection |
 *
 * Waiters in this process are woken on release. Of releases elsewhere, `'table'` learns from one poll per waited-for
 * lock and process (every 2 ms while it changes hands, backing off to 100 ms), which wakes one waiter per free slot; the session
 * strategies' waiters poll (jittered, bounded by the lease).
 * The pool is never closed by the backend; `close()` gives back the connections it pinned.
 *
 * @example
 * import mysql from 'mysql2/promise'
 * const pool = mysql.createPool('mysql://root@127.0.0.1:3306/test')
 * const locks = createLocks({ backend: mysqlBackend({ pool }) })
 * // ...
 * await locks.close(); await pool.end()
 */
export function mysqlBackend(options: MysqlBackendOptions): Backend {
  const o = checkOptions('options', options)
  const strategy = strategyOption('mysqlBackend', STRATEGIES, o.strategy)
  if (o.pool === undefined || o.pool === null) {
    throw new TypeError(
      'latchkey: mysqlBackend needs options.pool, a mysql2 pool (mysql.createPool from mysql2/promise)',
    )
  }
  const timeout = checkTimeout('connectTimeoutMs', o.connectTimeoutMs, DEFAULT_CONNECT_TIMEOUT_MS)
  const label = backendLabel('mysql', mysqlServer(o.pool))
  const runner = new MysqlRunner(promisePool(o.pool as MysqlPool), timeout, label)
  if (strategy === 'get_lock') return new MysqlGetLockBackend(runner)
  if (strategy === 'for_update') return new MysqlForUpdateBackend(runner)
  return new MysqlTableBackend(runner)
}

/**
 * A backend from a `mysql://user:pass@host:port/db` URL (`?strategy=get_lock`, `?connectionLimit=10`): opens
 * its own mysql2 pool, which the backend's `close()` ends. Used by `backendFromUrl`.
 *
 * @example
 * const backend = await mysqlBackendFromUrl('mysql://root@127.0.0.1:3306/test?strategy=table')
 */
export function mysqlBackendFromUrl(url: string): Promise<Backend> {
  return openMysqlBackend(url, mysqlBackend)
}
