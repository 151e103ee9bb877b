import { mysqlBackend } from 'latchkey/mysql'
import { checkPrefix, DEFAULT_PREFIX } from './schema.js'
import type { Row, SqlDriver, SqlQuery } from './sql-driver.js'
import { SqlTxStore } from './sql-store.js'
import type { TxStore } from './types.js'

type MysqlResult = Row[] | { affectedRows: number }

/** The slice of a mysql2/promise connection the store uses. */
export interface MysqlConnectionLike {
  query(sql: string, params?: unknown[]): Promise<[unknown, unknown]>
  release(): void
  destroy(): void
}

/** The slice of a mysql2/promise pool the store uses. */
export interface MysqlPoolLike {
  getConnection(): Promise<MysqlConnectionLike>
  query(sql: string, params?: unknown[]): Promise<[unknown, unknown]>
}

/** Options of {@link mysqlStore}. */
export interface MysqlStoreOptions {
  /** A mysql2/promise pool (`mysql.createPool`); never closed by the store unless `ownsPool`. */
  pool: MysqlPoolLike
  /** Table prefix. Default `latchkey_tx_`. */
  tablePrefix?: string
  /** Whether `close()` ends the pool. Default false. */
  ownsPool?: boolean
}

const params = (values: readonly unknown[]) => values.map((v) => (typeof v === 'bigint' ? v.toString() : v))

/**
 * The log in MariaDB 10.6+ / MySQL 8 (InnoDB) through a mysql2/promise pool, with row leases (recovery leases
 * on each transaction's own row); `lockBackend()` is latchkey's MySQL `table` backend on the same pool.
 *
 * @example
 * const pool = mysql.createPool('mysql://root@127.0.0.1:3306/test')
 * const tc = createCoordinator({ store: mysqlStore({ pool }) })
 */
export function mysqlStore(options: MysqlStoreOptions): TxStore {
  if (typeof options?.pool?.getConnection !== 'function') {
    throw new TypeError('latchkey-tx: mysqlStore needs options.pool, a mysql2/promise pool (mysql.createPool(...))')
  }
  const prefix = checkPrefix(options.tablePrefix ?? DEFAULT_PREFIX)
  const pool = options.pool
  const run =
    (client: MysqlPoolLike | MysqlConnectionLike): SqlQuery =>
    async (sql, values = []) => {
      const [result] = (await client.query(sql, params(values))) as [MysqlResult, unknown]
      if (Array.isArray(result)) return { rows: result, affected: 0 }
      return { rows: [], affected: result.affectedRows }
    }
  const driver: SqlDriver = {
    dialect: 'mysql',
    query: run(pool),
    async transaction(fn) {
      const conn = await pool.getConnection()
      let broken = false
      try {
        await conn.query('BEGIN')
        const result = await fn(run(conn))
        await conn.query('COMMIT')
        return result
      } catch (error) {
        await conn.query('ROLLBACK').catch(() => {
          broken = true
        })
        throw error
      } finally {
        if (broken) conn.destroy()
        else conn.release()
      }
    },
    close: async () => {
      if (options.ownsPool === true) await (pool as unknown as { end(): Promise<void> }).end()
    },
  }
  return new SqlTxStore(driver, prefix, () => mysqlBackend({ pool: pool as never }))
}
