import { dollarPlaceholders } from '../store/sql-driver.js'
import type { OutboxDialect } from './schema.js'

/**
 * The caller's open transaction, as handed to `outbox.add` / `inbox.once`:
 * - PostgreSQL: a `pg` Client or PoolClient on which `BEGIN` has run;
 * - MySQL/MariaDB: a mysql2 connection (promise API, or the callback one, whose `.promise()` is used) inside
 *   `beginTransaction()`;
 * - SQLite: the better-sqlite3 `Database`, called from inside `db.transaction(...)`.
 */
export type CallerTrx = object

/** One statement in the caller's transaction; `sync` is set for SQLite, whose transactions are synchronous. */
export type TrxRunner =
  | { dialect: 'sqlite'; sync: (sql: string, params: readonly unknown[]) => number }
  | { dialect: 'postgres' | 'mysql'; run: (sql: string, params: readonly unknown[]) => Promise<number> }

const has = (value: object, name: string) => typeof (value as Record<string, unknown>)[name] === 'function'

/** Recognizes the caller's transaction handle and checks that it is one (no I/O); returns how to write in it. */
export function trxRunner(trx: unknown, expected: OutboxDialect, who: string): TrxRunner {
  if (typeof trx !== 'object' || trx === null) {
    throw new TypeError(`latchkey-tx: ${who} needs the caller's transaction (trx) first, received ${String(trx)}`)
  }
  const dialect = dialectOf(trx, who)
  if (dialect !== expected) {
    throw new TypeError(
      `latchkey-tx: ${who} got a ${dialect} transaction but its store is ${expected}: the rows must live in the business database`,
    )
  }
  if (dialect === 'sqlite') {
    const db = trx as { inTransaction: boolean; prepare(sql: string): { run(...p: unknown[]): { changes: number } } }
    // Outside db.transaction() the insert would commit on its own, apart from the business write.
    if (db.inTransaction !== true) {
      throw new TypeError(`latchkey-tx: ${who} must be called inside db.transaction(...) (the Database is in none)`)
    }
    return { dialect, sync: (sql, params) => db.prepare(sql).run(...params).changes }
  }
  if (dialect === 'postgres') {
    const client = trx as {
      query(sql: string, params: unknown[]): Promise<{ rowCount: number | null }>
      getTransactionStatus?: () => string | null
    }
    // pg >= 8.12 reports the server's transaction status: 'I' means autocommit, so the row would not roll back.
    if (client.getTransactionStatus?.() === 'I') {
      throw new TypeError(`latchkey-tx: ${who} needs a pg client inside a transaction (run BEGIN first)`)
    }
    return {
      dialect,
      run: async (sql, params) => (await client.query(dollarPlaceholders(sql), [...params])).rowCount ?? 0,
    }
  }
  // Only mysql2's callback connections have promise(): it wraps the same connection, so the same transaction.
  const conn = (has(trx, 'promise') ? (trx as { promise(): object }).promise() : trx) as {
    query(sql: string, params: unknown[]): Promise<[unknown, unknown]>
  }
  return {
    dialect,
    run: async (sql, params) => {
      const [result] = await conn.query(sql, [...params])
      return (result as { affectedRows?: number }).affectedRows ?? 0
    },
  }
}

function dialectOf(trx: object, who: string): OutboxDialect {
  if (has(trx, 'prepare') && has(trx, 'transaction') && 'inTransaction' in trx) return 'sqlite'
  // A pool hands each statement to any connection: never the one holding the caller's transaction.
  if (has(trx, 'getConnection') || (has(trx, 'connect') && 'totalCount' in trx)) {
    throw new TypeError(`latchkey-tx: ${who} needs the connection holding the transaction, received a pool`)
  }
  if (has(trx, 'beginTransaction') && has(trx, 'query')) return 'mysql'
  if (has(trx, 'query') && ('getTransactionStatus' in trx || 'processID' in trx)) return 'postgres'
  throw new TypeError(
    `latchkey-tx: ${who} trx must be a pg client, a mysql2 connection or a better-sqlite3 Database, received ${trx.constructor?.name ?? typeof trx}`,
  )
}
