/**
 * The slice of mysql2's promise API the MySQL backend uses, and its error mapping. mysql2 itself is never
 * imported here: the application hands in its pool.
 */
import { BackendUnavailableError } from '../../errors.js'
import { redactText } from '../../redact-url.js'
import { PoolRunner } from '../sql/sql-runner.js'

/** The OK packet of a write statement. */
export interface MysqlResultHeader {
  readonly affectedRows: number
  readonly insertId: number
  /** e.g. `Rows matched: 1  Changed: 0  Warnings: 0` for an UPDATE. */
  readonly info?: string
}

/** A `mysql2/promise` pool connection. */
export interface MysqlConnection {
  query(sql: string, values?: unknown[]): Promise<[unknown, unknown]>
  release(): void
  destroy(): void
  readonly threadId: number | null
  on(event: 'error' | 'end', listener: (...args: unknown[]) => void): unknown
  removeListener(event: 'error' | 'end', listener: (...args: unknown[]) => void): unknown
}

/** A `mysql2/promise` pool (`mysql.createPool(...)` from `mysql2/promise`, or a callback pool's `.promise()`). */
export interface MysqlPool {
  getConnection(): Promise<MysqlConnection>
}

/** A callback pool from `mysql2`; the backend calls its `.promise()`. */
export interface MysqlCallbackPool {
  promise(): MysqlPool
}

/** The database clock in epoch milliseconds, independent of the session time zone (no DST fold). */
export const NOW_MS = "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)"

/** Server errors meaning "the connection or server is gone / busy; try again". */
const TRANSIENT_ERRNOS = new Set([
  1040, // ER_CON_COUNT_ERROR
  1053, // ER_SERVER_SHUTDOWN
  1205, // ER_LOCK_WAIT_TIMEOUT
  1213, // ER_LOCK_DEADLOCK
  1317, // ER_QUERY_INTERRUPTED
  1927, // ER_CONNECTION_KILLED (MariaDB)
  2006, // CR_SERVER_GONE_ERROR
  2013, // CR_SERVER_LOST
])

/** Whether an error means the connection it happened on is unusable. */
export function isFatal(error: unknown): boolean {
  const e = error as { fatal?: unknown; code?: unknown }
  // Node socket errors (ECONNRESET, EPIPE, ...) and mysql2 protocol errors; server errors are ER_* and the
  // connection survives them (mysql2 marks the fatal ones with `fatal`).
  return e?.fatal === true || (typeof e?.code === 'string' && /^(E[A-Z]+|PROTOCOL_[A-Z_]+)$/.test(e.code))
}

/** Server errors meaning "this pool cannot log in or use its database": the URL or the grants need a fix. */
const LOGIN_ERRNOS = new Set([
  1044, // ER_DBACCESS_DENIED_ERROR
  1045, // ER_ACCESS_DENIED_ERROR
  1049, // ER_BAD_DB_ERROR
  1698, // ER_ACCESS_DENIED_NO_PASSWORD_ERROR
])

/**
 * Maps connection / availability failures to `BackendUnavailableError` naming the server (`label`, e.g.
 * `mysql backend at 127.0.0.1:3306`); other errors pass through. `secrets` are hidden from the message.
 */
export function mapError(error: unknown, label: string, secrets: readonly string[] = []): unknown {
  if (error instanceof BackendUnavailableError) return error
  const e = error as { errno?: unknown; message?: unknown }
  const message = redactText(String(e?.message), secrets)
  if (typeof e?.errno === 'number' && LOGIN_ERRNOS.has(e.errno)) {
    return new BackendUnavailableError(`${label}: ${message}; check the user, password and database`, {
      cause: error,
    })
  }
  const transient = isFatal(error) || (typeof e?.errno === 'number' && TRANSIENT_ERRNOS.has(e.errno))
  const noneFree = typeof e?.message === 'string' && /No connections available|Pool is closed/i.test(e.message)
  if (!transient && !noneFree) return error
  return new BackendUnavailableError(`${label}: ${message}; try again`, { cause: error })
}

/** `host:port` of a mysql2 pool (promise or callback), read from its config; `undefined` when hidden. */
export function mysqlServer(pool: unknown): string | undefined {
  const p = pool as {
    pool?: unknown
    config?: { connectionConfig?: { host?: string; port?: number; socketPath?: string } }
  }
  const config = (p?.config ?? (p?.pool as typeof p | undefined)?.config)?.connectionConfig
  if (config === undefined) return undefined
  return config.socketPath ?? `${config.host ?? 'localhost'}:${config.port ?? 3306}`
}

/** The pool's password, hidden from messages built from driver errors. */
export function mysqlSecrets(pool: unknown): string[] {
  const p = pool as { pool?: unknown; config?: { connectionConfig?: { password?: unknown } } }
  const password = (p?.config ?? (p?.pool as typeof p | undefined)?.config)?.connectionConfig?.password
  return typeof password === 'string' && password.length > 0 ? [password] : []
}

/** Accepts a promise pool or a callback pool. */
export function promisePool(pool: MysqlPool | MysqlCallbackPool): MysqlPool {
  const p = pool as Partial<MysqlCallbackPool> & Partial<MysqlPool>
  if (typeof p.getConnection !== 'function') {
    throw new TypeError(
      'latchkey: mysqlBackend needs options.pool, a mysql2 pool (mysql.createPool from mysql2/promise)',
    )
  }
  return typeof p.promise === 'function' ? (p as MysqlCallbackPool).promise() : (p as MysqlPool)
}

/** Rows matched by an UPDATE, whatever the pool's `FOUND_ROWS` flag (see {@link MysqlPool} notes). */
export function matchedRows(header: MysqlResultHeader): number {
  // mysql2 connects with CLIENT_FOUND_ROWS by default, which makes affectedRows mean "matched"; without
  // it affectedRows means "changed", so a renew writing the same millisecond would look like a miss.
  // The info string always carries "Rows matched".
  const m = /Rows matched:\s*(\d+)/.exec(header.info ?? '')
  return m?.[1] === undefined ? header.affectedRows : Number(m[1])
}

/** The {@link PoolRunner} of a mysql2 pool. */
export class MysqlRunner extends PoolRunner<MysqlConnection> {
  /** `backendName` is how messages name the backend and its server: `mysql backend at 127.0.0.1:3306`. */
  constructor(
    readonly pool: MysqlPool,
    connectTimeoutMs: number,
    backendName: string,
  ) {
    super(connectTimeoutMs, backendName, mysqlSecrets(pool))
  }

  protected take(): Promise<MysqlConnection> {
    return this.pool.getConnection()
  }

  giveBack(connection: MysqlConnection, healthy: boolean): void {
    if (healthy) connection.release()
    else connection.destroy()
  }

  isFatal(error: unknown): boolean {
    return isFatal(error)
  }

  mapError(error: unknown): unknown {
    return mapError(error, this.backendName, this.secrets)
  }

  /** One statement in autocommit mode. */
  async query<T>(sql: string, values: unknown[] = []): Promise<T> {
    return this.with(async (c) => (await c.query(sql, values))[0] as T)
  }
}
