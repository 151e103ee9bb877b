import type { Backend } from '../../backend/types.js'
import { checkOptions } from '../../core/validate.js'
import { SqliteBackend, type SqliteBackendOptions, type SqliteDatabase } from './sqlite-backend.js'

export { SqliteBackend, type SqliteBackendOptions, type SqliteDatabase }

/**
 * Locks in a SQLite file shared by every process on this host: the embedded default. Needs
 * `better-sqlite3` 12.x. A database handed in as `database` is never closed by the backend.
 *
 * @example
 * const backend = sqliteBackend({ path: './locks.db' })
 * const locks = createLocks({ backend })
 * // ...
 * await locks.close(); await backend.close()
 */
export function sqliteBackend(options: SqliteBackendOptions): Backend {
  const o = checkOptions('options', options)
  if (o.database === undefined && (typeof o.path !== 'string' || o.path.length === 0)) {
    throw new TypeError(
      `latchkey: sqliteBackend needs options.path (a file path) or options.database, received path ${String(o.path)}`,
    )
  }
  if (o.synchronous !== undefined && o.synchronous !== 'full' && o.synchronous !== 'normal') {
    throw new RangeError(`latchkey: synchronous must be "full" or "normal", received ${String(o.synchronous)}`)
  }
  return new SqliteBackend(options)
}
